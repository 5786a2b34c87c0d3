"""Command-line pieces that several subcommands share.

``compile`` and ``stf`` both read a P4 program through the preprocessor, so they
take the same ``-I DIR`` and ``-D NAME[=VALUE]`` options, added here by
:func:`add_preprocessor_options`.  ``experiment`` and ``simulate`` both take a
``--repeat`` count and a comma-separated ``--modes`` list checked against the
modes the command knows (:func:`checked_modes`), so that an unknown mode reads
the same in both; and both run their work through :func:`exit_status`, which
turns Ctrl-C and a bad input file into exit statuses.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from kvfabric.suggest import choice_list


def define(text: str) -> tuple[str, str]:
    """``NAME=VALUE`` -> (NAME, VALUE); a bare ``NAME`` defines it as ``1``."""
    name, eq, value = text.partition("=")
    if not name:
        raise argparse.ArgumentTypeError(f"bad -D {text!r}: expected NAME or NAME=VALUE")
    return name, value if eq else "1"


def add_preprocessor_options(parser: argparse.ArgumentParser) -> None:
    """Add ``-I DIR`` (``include_dirs``) and ``-D NAME[=VALUE]`` (``defines``)."""
    parser.add_argument(
        "-I",
        dest="include_dirs",
        action="append",
        default=[],
        metavar="DIR",
        help="add DIR to the include path",
    )
    parser.add_argument(
        "-D",
        dest="defines",
        action="append",
        type=define,
        default=[],
        metavar="NAME[=VALUE]",
        help="define a preprocessor macro (VALUE defaults to 1)",
    )


def checked_modes(repeat: int, text: str | None, known: Sequence[str]) -> tuple[str, ...] | None:
    """The modes of a ``--modes`` list, None when it is not given.

    Raises ValueError when ``--repeat`` is below 1, or naming the first mode not in
    ``known``, with the closest one.
    """
    if repeat < 1:
        raise ValueError("--repeat must be at least 1")
    return choice_list(text, known, "mode") if text else None


def exit_status(
    command: str,
    work: Callable[[], int],
    errors: tuple[type[Exception], ...],
    interrupted: str = "interrupted",
) -> int:
    """``work()``'s exit status; 130 after Ctrl-C, 1 after one of ``errors``.

    Either of the two is said in one ``kvfabric COMMAND: ...`` line on stderr.
    """
    try:
        return work()
    except KeyboardInterrupt:
        print(f"\nkvfabric {command}: {interrupted}", file=sys.stderr)
        return 130
    except errors as exc:
        print(f"kvfabric {command}: error: {exc}", file=sys.stderr)
        return 1
