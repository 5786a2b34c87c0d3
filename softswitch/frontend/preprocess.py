"""Run the C preprocessor over a P4 file, as p4c does before parsing.

P4_16 programs use ``#include``, ``#define`` and ``#ifdef`` with C semantics,
so the front-end delegates them to gcc's ``cpp`` instead of reimplementing
them.  ``cpp`` runs in C mode with ``-undef -nostdinc`` (no host macros, no
host headers) and keeps its ``# <line> "<file>"`` markers in the output; the
lexer reads those markers, so every location in the syntax tree names the
user's file and line, including locations inside included files.

The include path is the caller's directories followed by the package's own
``softswitch/p4include/`` (``core.p4``, ``v1model.p4``), so ``#include
<v1model.p4>`` works out of the box and a caller can still override it.
``__TARGET_BMV2__`` is predefined, as p4c's BMv2 back-end does, because this
target mimics simple_switch and programs test that macro to pick v1model code.

A failure of ``cpp`` (a missing include, an ``#error``, a malformed
directive) becomes a :class:`~softswitch.errors.P4SourceError` at the location
``cpp`` reports.  The subprocess call is the single seam to the outside world:
:func:`preprocess` takes the runner as a parameter so tests can replace it.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from softswitch.errors import Loc, P4SourceError

CPP = "/usr/bin/cpp"
P4INCLUDE_DIR = str(Path(__file__).resolve().parent.parent / "p4include")
PREDEFINED: Mapping[str, str] = {"__TARGET_BMV2__": "1"}

Runner = Callable[[list[str]], "subprocess.CompletedProcess[str]"]

_DIAGNOSTIC_RE = re.compile(
    r"^(?P<file>[^\n:]+):(?P<line>\d+):(?:(?P<col>\d+):)?\s*(?:fatal )?error:\s*(?P<msg>.*)$",
    re.MULTILINE,
)


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def cpp_command(
    path: str, include_dirs: Sequence[str] = (), defines: Mapping[str, str] | None = None
) -> list[str]:
    """The ``cpp`` command line that preprocesses ``path``."""
    argv = [CPP, "-undef", "-nostdinc", "-x", "c", "-std=c99"]
    for directory in [*include_dirs, P4INCLUDE_DIR]:
        argv.append(f"-I{directory}")
    for name, value in {**PREDEFINED, **(defines or {})}.items():
        argv.append(f"-D{name}={value}" if value != "" else f"-D{name}")
    argv.append(path)
    return argv


def preprocess(
    path: str,
    include_dirs: Sequence[str] = (),
    defines: Mapping[str, str] | None = None,
    runner: Runner = _run,
) -> str:
    """Preprocess the P4 file ``path``; returns text with ``#`` line markers.

    Raises P4SourceError when the file cannot be read or ``cpp`` fails.
    """
    if not Path(path).is_file():
        raise P4SourceError(Loc(path, 0, 0), f"cannot read '{path}': no such file")
    argv = cpp_command(path, include_dirs, defines)
    try:
        result = runner(argv)
    except OSError as error:
        raise P4SourceError(
            Loc(path, 0, 0), f"cannot run the C preprocessor '{CPP}': {error.strerror}"
        ) from error
    if result.returncode != 0:
        raise _cpp_error(path, result.stderr)
    return result.stdout


def _cpp_error(path: str, stderr: str) -> P4SourceError:
    """The first error in ``cpp``'s diagnostics, as a located P4SourceError."""
    match = _DIAGNOSTIC_RE.search(stderr)
    if match is None:
        detail = stderr.strip().splitlines()[0] if stderr.strip() else "no diagnostic"
        return P4SourceError(Loc(path, 0, 0), f"the C preprocessor failed: {detail}")
    col = int(match.group("col")) if match.group("col") else 1
    loc = Loc(match.group("file"), int(match.group("line")), col)
    return P4SourceError(loc, f"preprocessor: {match.group('msg').strip()}")
