"""``kvfabric switch``: a software switch with simple_switch_grpc's command line.

The argument list is handed over untouched (``RAW_ARGV``) and parsed by
:func:`softswitch.switch.argv.parse_argv`; see that module for the grammar and
this target's additions.  Exit statuses: 0 after a clean stop (SIGTERM or
SIGINT), 1 for an error while starting (a bad program, an interface that
cannot be opened, a port that cannot be bound), 2 for a bad command line.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from softswitch.errors import SoftswitchError
from softswitch.switch.argv import USAGE, UsageError, parse_argv

RAW_ARGV = True


def configure(parser: argparse.ArgumentParser) -> None:
    """Unused: the switch takes its raw argument list (``RAW_ARGV``)."""
    parser.add_argument("argv", nargs=argparse.REMAINDER)


def run(args: argparse.Namespace) -> int:
    try:
        options = parse_argv(args.argv)
    except UsageError as exc:
        print(USAGE, file=sys.stderr)
        print(f"kvfabric switch: error: {exc}", file=sys.stderr)
        return 2
    if options.show_help:
        from softswitch.switch import argv

        print(USAGE)
        print(argv.__doc__)
        return 0
    if options.show_version:
        from importlib.metadata import version

        print(f"kvfabric switch {version('kvfabric')} (simple_switch_grpc command line)")
        return 0
    from softswitch.switch.main import run_switch

    try:
        return asyncio.run(run_switch(options))
    except SoftswitchError as exc:
        print(f"kvfabric switch: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"kvfabric switch: error: {exc}", file=sys.stderr)
        return 1
