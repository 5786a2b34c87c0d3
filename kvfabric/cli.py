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
from kvfabric.commands import EXTRAS, SUBCOMMANDS, module_name
from kvfabric.procname import apply_requested_name
from softswitch.errors import SoftswitchError

DESCRIPTION = (
    "kvfabric: steer the KV-cache transfers of disaggregated LLM inference onto the "
    "least-loaded paths of a P4 leaf-spine fabric"
)


OWN_PACKAGES = frozenset({"kvfabric", "softswitch", "controller", "experiment", "lab", "simulator"})


class MissingExtra(Exception):
    """A subcommand's module needs a library of an extra that is not installed."""

    def __init__(self, command: str, missing: str) -> None:
        self.extra = extra = EXTRAS.get(command, "all")
        super().__init__(
            f"kvfabric {command}: needs the '{extra}' extra (no module named {missing!r}): "
            f"pip install 'kvfabric[{extra}]'"
        )


def _module_for(name: str) -> ModuleType:
    """The module of subcommand ``name``; :class:`MissingExtra` when a library it needs
    is not installed (one of our own modules missing is a fault, and raises as such)."""
    try:
        return importlib.import_module(module_name(name))
    except ModuleNotFoundError as exc:
        raise _missing(name, exc) from None


def _missing(name: str, exc: ModuleNotFoundError) -> Exception:
    """What a subcommand's missing module means: an extra to install (a library), or a
    fault of the installation (one of kvfabric's own modules), raised as it came."""
    top = (exc.name or "").partition(".")[0]
    if not top or top in OWN_PACKAGES:
        return exc
    return MissingExtra(name, exc.name or top)


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser, with every subcommand (one whose extra is missing takes any
    arguments and says which extra to install)."""
    parser = argparse.ArgumentParser(prog="kvfabric", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"kvfabric {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, summary in SUBCOMMANDS.items():
        try:
            module, options = _configured(name)
        except MissingExtra as missing:
            help_text = f"{summary} (needs: pip install 'kvfabric[{missing.extra}]')"
            sp = sub.add_parser(name, help=help_text, description=help_text)
            sp.set_defaults(_module=None)
            sp.add_argument("argv", nargs=argparse.REMAINDER)
            continue
        sp = sub.add_parser(name, help=summary, description=summary, parents=[options])
        sp.set_defaults(_module=module)
    return parser


def _configured(name: str) -> tuple[ModuleType, argparse.ArgumentParser]:
    """Subcommand ``name``'s module and its options (a parent parser without ``-h``);
    :class:`MissingExtra` when a library either needs is not installed."""
    module = _module_for(name)
    options = argparse.ArgumentParser(add_help=False)
    if getattr(module, "RAW_ARGV", False):
        options.add_argument("argv", nargs=argparse.REMAINDER)
        return module, options
    try:
        module.configure(options)
    except ModuleNotFoundError as exc:
        raise _missing(name, exc) from None
    return module, options


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    apply_requested_name()
    try:
        return _dispatch(argv)
    except MissingExtra as exc:
        print(exc, file=sys.stderr)
        return 1
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
    if args._module is None:
        _module_for(args.command)  # raises MissingExtra, with the library missing
    return int(args._module.run(args))


if __name__ == "__main__":
    sys.exit(main())
