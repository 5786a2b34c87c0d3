"""``kvfabric bench``: run the benchmarks, which print figures rather than pass or fail.

Each benchmark is a module ``benchmarks/<name>.py`` of the source tree, run in its own
process as ``python -m benchmarks.<name>`` from the tree's root (so that it imports
``benchmarks`` and ``tests`` as packages, with no ``sys.path`` editing), so that one
benchmark's warm caches or threads do not colour another's. ``all``
runs every script in name order; ``kvfabric bench NAME [ARGS...]`` runs one with its own
arguments. Every benchmark prints, as its last line, one JSON object of its figures.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH_DIR = ROOT / "benchmarks"

NEEDS_ENV = {"conformance": "KVFABRIC_P4C_TESTDATA"}
"""Benchmarks that need outside data: ``all`` runs them only when the variable is set."""


def available() -> dict[str, Path]:
    """Benchmark name -> script, for every script in the benchmarks folder."""
    if not BENCH_DIR.is_dir():
        return {}
    return {p.stem: p for p in sorted(BENCH_DIR.glob("*.py")) if not p.name.startswith("_")}


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the benchmark name and its pass-through arguments."""
    parser.add_argument("name", nargs="?", default="all", help="benchmark to run, or 'all'")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the benchmark")


def run(args: argparse.Namespace) -> int:
    """Run one benchmark or all of them; the status is the first failure's, else 0."""
    scripts = available()
    if args.name == "all":
        chosen = list(scripts.items())
    elif args.name in scripts:
        chosen = [(args.name, scripts[args.name])]
    else:
        names = ", ".join(scripts) or "none"
        print(f"kvfabric bench: no benchmark named {args.name!r} (have: {names})", file=sys.stderr)
        return 2
    status = 0
    for name in (n for n, _ in chosen):
        needed = NEEDS_ENV.get(name)
        if args.name == "all" and needed and not os.environ.get(needed):
            print(f"== bench {name}: skipped (set {needed} to run it)", flush=True)
            continue
        print(f"== bench {name}", flush=True)
        extra = list(args.args) if args.name != "all" else []
        rc = subprocess.call([sys.executable, "-m", f"benchmarks.{name}", *extra], cwd=ROOT)
        if rc != 0:
            print(f"== bench {name}: exit status {rc}", file=sys.stderr)
            status = status or rc
    return status
