"""``kvfabric bmv2-shims DIR``: BMv2's and p4c's executable names, running kvfabric.

Writes four executables into DIR (created if missing, existing shims replaced)::

    simple_switch_grpc   ->  kvfabric switch        (simple_switch_grpc's command line)
    simple_switch_CLI    ->  kvfabric switch-cli    (reads commands from stdin)
    p4c                  ->  kvfabric compile --p4c-driver
    p4c-bm2-ss           ->  kvfabric compile

With DIR first in PATH, launchers written for BMv2 run unchanged: p4lang
tutorials' ``run_exercise.py`` picks its P4Runtime switch class because
"grpc" is in the binary's name, starts it as ``simple_switch_grpc ... &`` and
stops it with ``kill %simple_switch_grpc``; each shim ``exec``s, so the job's
process is the switch itself.  A shim names the Python interpreter and the
source tree that wrote it, so it runs the same kvfabric under ``sudo`` (which
resets the environment) as in the shell that wrote it.  A path that exists and
is not a directory, or a file in DIR that is not a shim, is refused.  The
process takes the shim's name (see :mod:`kvfabric.procname`), so scripts that
find BMv2 by name (``pkill simple_switch``, ``ps -C``) find it.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import kvfabric

MARKER = "# written by `kvfabric bmv2-shims`"
SHIMS: dict[str, tuple[str, ...]] = {
    "simple_switch_grpc": ("switch",),
    "simple_switch_CLI": ("switch-cli",),
    "p4c": ("compile", "--p4c-driver"),
    "p4c-bm2-ss": ("compile",),
}


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the arguments of ``kvfabric bmv2-shims``."""
    parser.add_argument("directory", metavar="DIR", help="where to write the executables")


def shim_text(name: str, python: str, root: str) -> str:
    """The shell script that runs ``kvfabric SHIMS[name]...`` for ``name``."""
    command = " ".join(shlex.quote(a) for a in (python, "-m", "kvfabric.cli", *SHIMS[name]))
    return (
        "#!/bin/sh\n"
        f"{MARKER}: {name}'s command line, run by kvfabric\n"
        f'PYTHONPATH={shlex.quote(root)}"${{PYTHONPATH:+:$PYTHONPATH}}"\n'
        f"KVFABRIC_PROCESS_NAME={shlex.quote(name)}\n"
        "export PYTHONPATH KVFABRIC_PROCESS_NAME\n"
        f'exec {command} "$@"\n'
    )


def write_shims(directory: Path, python: str, root: str) -> list[Path]:
    """Write every shim into ``directory``; returns their paths."""
    if directory.exists() and not directory.is_dir():
        raise NotADirectoryError(f"{directory} exists and is not a directory")
    directory.mkdir(parents=True, exist_ok=True)
    for name in SHIMS:
        path = directory / name
        if path.exists() and MARKER not in path.read_text(errors="replace"):
            raise FileExistsError(f"{path} exists and was not written by kvfabric bmv2-shims")
    written = []
    for name in SHIMS:
        path = directory / name
        path.write_text(shim_text(name, python, root))
        path.chmod(0o755)
        written.append(path)
    return written


def run(args: argparse.Namespace) -> int:
    """Write the shims; 1 with one line on stderr if DIR cannot take them."""
    root = str(Path(kvfabric.__file__).resolve().parent.parent)
    try:
        paths = write_shims(Path(args.directory), sys.executable, root)
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for path in paths:
        print(path)
    return 0
