"""``kvfabric stf``: run a P4 program against a p4c STF test file.

    kvfabric stf PROG.p4 TEST.stf [-I DIR]... [-D NAME[=VALUE]]...
                 [--load-modules FILE.py[,FILE.py...]] [-v]

The program is compiled by the softswitch front-end and run by its
interpreter, with the extern functions the program declares taken from the
``--load-modules`` files (:mod:`softswitch.interp.extern_funcs`); the STF
file is read and run as p4c's BMv2 driver does (see :mod:`softswitch.stf`). Exit statuses:

* 0: every expected packet arrived and every check held;
* 1: a mismatch; a per-port diff of expected and received packets is printed;
* 2: the program does not compile or uses an unsupported feature, or the STF
  file has a bad line; one located ``file:line[:col]: error: ...`` line.
"""

from __future__ import annotations

import argparse
import sys

from kvfabric.commands.options import add_preprocessor_options
from softswitch.errors import SoftswitchError
from softswitch.stf import run_stf

EXIT_PASS = 0
EXIT_MISMATCH = 1
EXIT_ERROR = 2


def _modules(text: str) -> list[str]:
    return [path for path in text.split(",") if path]


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the arguments of ``kvfabric stf``."""
    parser.add_argument("program", metavar="PROG.p4", help="the P4_16 v1model program")
    parser.add_argument("stf", metavar="TEST.stf", help="the STF test file")
    add_preprocessor_options(parser)
    parser.add_argument(
        "--load-modules",
        dest="modules",
        type=_modules,
        default=[],
        metavar="FILE.py[,FILE.py...]",
        help="Python files of extern functions the program declares (as simple_switch's "
        "--load-modules, with Python for C++)",
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="show every port, not only failing ones"
    )


def run(args: argparse.Namespace) -> int:
    """Run the test; 0 pass, 1 mismatch, 2 error in the program or the STF file."""
    try:
        result = run_stf(
            args.program, args.stf, args.include_dirs, dict(args.defines), args.modules
        )
    except SoftswitchError as exc:
        print(exc, file=sys.stderr)
        return EXIT_ERROR
    print(result.report(verbose=args.verbose))
    return EXIT_PASS if result.passed else EXIT_MISMATCH
