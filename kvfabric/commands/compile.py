"""``kvfabric compile``: a P4 program's P4Info, as p4c-bm2-ss writes it, and the device config.

    kvfabric compile PROG.p4 --p4runtime-files OUT.p4info.txtpb[,OUT.json,...]
                     [-o OUT.json] [-I DIR]... [-D NAME[=VALUE]]...

``--p4runtime-files`` takes a comma-separated list, like p4c; each file's
format follows its suffix: ``.txt`` and ``.txtpb`` protobuf text (byte-identical
to p4c's), ``.json`` protobuf JSON, ``.bin`` the binary wire format.
``-o`` writes the softswitch's device config (see
:mod:`softswitch.p4info.device_config`), which ``SetForwardingPipelineConfig``
carries to a ``kvfabric switch``.

An error in the program prints one ``file:line:col: error: ...`` line and exits 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from softswitch import p4info
from softswitch.errors import SoftswitchError
from softswitch.frontend.preprocess import preprocess
from softswitch.p4info import device_config

_FORMATS = {".txt": "text", ".txtpb": "text", ".json": "json", ".bin": "binary"}


def p4runtime_files(spec: str) -> list[tuple[str, str]]:
    """``"a.txtpb,b.json"`` -> [(path, format)]; argparse error on an unknown suffix."""
    files: list[tuple[str, str]] = []
    for name in spec.split(","):
        suffix = Path(name).suffix
        if not suffix:
            raise argparse.ArgumentTypeError(
                f"{name}: unknown file kind; known suffixes are .bin, .txt, .txtpb, .json"
            )
        if suffix not in _FORMATS:
            raise argparse.ArgumentTypeError(
                f"{name}: Could not detect p4runtime info file format from file suffix {suffix}"
            )
        files.append((name, _FORMATS[suffix]))
    return files


def _define(text: str) -> tuple[str, str]:
    name, _, value = text.partition("=")
    if not name:
        raise argparse.ArgumentTypeError(f"bad -D {text!r}: expected NAME or NAME=VALUE")
    return name, value if "=" in text else "1"


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the arguments of ``kvfabric compile``."""
    parser.add_argument("program", metavar="PROG.p4", help="the P4_16 v1model program")
    parser.add_argument(
        "--p4runtime-files",
        type=p4runtime_files,
        default=[],
        metavar="FILES",
        help="comma-separated P4Info outputs; .txt/.txtpb, .json or .bin picks the format",
    )
    parser.add_argument(
        "-o", "--output", metavar="OUT", help="write the softswitch device config (JSON) here"
    )
    parser.add_argument(
        "-I", dest="include_dirs", action="append", default=[], metavar="DIR", help="include dir"
    )
    parser.add_argument(
        "-D",
        dest="defines",
        action="append",
        type=_define,
        default=[],
        metavar="NAME[=VALUE]",
        help="preprocessor definition",
    )


def run(args: argparse.Namespace) -> int:
    """Compile ``args.program``; 0 on success, 1 on an error in the program or an output."""
    defines = dict(args.defines)
    try:
        program = p4info.load(args.program, args.include_dirs, defines)
        info = p4info.p4info_of(program)
        for path, fmt in args.p4runtime_files:
            p4info.write_p4info(info, path, fmt)
        if args.output:
            source = preprocess(args.program, args.include_dirs, defines)
            config = device_config.make_device_config(source, args.program, info)
            device_config.write(args.output, config)
    except SoftswitchError as exc:
        print(exc, file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"error: {exc.filename or args.program}: {exc.strerror}", file=sys.stderr)
        return 1
    return 0
