"""The ``kvfabric`` console script: one subcommand per module of :mod:`kvfabric.commands`
(or of the part it belongs to: ``kvfabric.commands.ELSEWHERE``).

Every name in :data:`kvfabric.commands.SUBCOMMANDS` must have its module: a missing
one is an installation fault and fails loudly, never a subcommand that silently
disappears from ``--help``. User errors are printed as one located line and turn into
exit status 1 unless the subcommand chose another: each subcommand catches its own
tree (the experiment's ``ExperimentError``, the controller's ``ControllerError``), and
this module catches :class:`softswitch.errors.SoftswitchError` for all of them. Nothing the user
types produces a Python traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType

from kvfabric import __version__
from kvfabric.commands import SUBCOMMANDS, module_name
from kvfabric.procname import apply_requested_name
from softswitch.errors import SoftswitchError

DESCRIPTION = (
    "kvfabric: steer the KV-cache transfers of disaggregated LLM inference onto the "
    "least-loaded paths of a P4 leaf-spine fabric"
)


def _module_for(name: str) -> ModuleType:
    return importlib.import_module(module_name(name))


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser, with every subcommand."""
    parser = argparse.ArgumentParser(prog="kvfabric", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"kvfabric {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, help_text in SUBCOMMANDS.items():
        module = _module_for(name)
        sp = sub.add_parser(name, help=help_text, description=help_text)
        sp.set_defaults(_module=module)
        if getattr(module, "RAW_ARGV", False):
            sp.add_argument("argv", nargs=argparse.REMAINDER)
        else:
            module.configure(sp)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    apply_requested_name()
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
        if getattr(module, "RAW_ARGV", False):
            ns = argparse.Namespace(command=args_list[0], argv=args_list[1:], _module=module)
            return int(module.run(ns))
    args = build_parser().parse_args(args_list)
    return int(args._module.run(args))


if __name__ == "__main__":
    sys.exit(main())
