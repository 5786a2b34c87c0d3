"""The ``kvfabric`` console script: one subcommand per module of :mod:`kvfabric.commands`.

User errors (every :class:`softswitch.errors.SoftswitchError` and
:class:`kvfabric.errors.KvfabricError`) are printed as one located line and turn
into exit status 1 unless the subcommand chose another; nothing the user types
produces a Python traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType

from kvfabric.commands import SUBCOMMANDS
from softswitch.errors import SoftswitchError


def _module_for(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(f"kvfabric.commands.{name.replace('-', '_')}")
    except ModuleNotFoundError as exc:
        if exc.name == f"kvfabric.commands.{name.replace('-', '_')}":
            return None
        raise


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser, with every subcommand that is installed."""
    parser = argparse.ArgumentParser(prog="kvfabric", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, help_text in SUBCOMMANDS.items():
        module = _module_for(name)
        if module is None:
            continue
        sp = sub.add_parser(name, help=help_text, description=help_text)
        sp.set_defaults(_module=module)
        if getattr(module, "RAW_ARGV", False):
            sp.add_argument("argv", nargs=argparse.REMAINDER)
        else:
            module.configure(sp)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    try:
        return _dispatch(argv)
    except SoftswitchError as exc:
        print(exc, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _dispatch(argv: Sequence[str] | None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    # A raw-argv command (switch) is dispatched before the other modules are imported,
    # so that one subcommand's import cost or failure never touches another.
    if args_list and args_list[0] in SUBCOMMANDS:
        module = _module_for(args_list[0])
        if module is not None and getattr(module, "RAW_ARGV", False):
            ns = argparse.Namespace(command=args_list[0], argv=args_list[1:], _module=module)
            return int(module.run(ns))
    args = build_parser().parse_args(args_list)
    return int(args._module.run(args))


if __name__ == "__main__":
    sys.exit(main())
