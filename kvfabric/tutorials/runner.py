"""``make tutorials TUTORIALS=DIR``: p4lang/tutorials' exercises, run unmodified on kvfabric.

    python -m kvfabric.tutorials.runner DIR [--venv .venv-tutorials] [--only NAME,...]
                                            [--report FILE] [--keep]

For each exercise of :mod:`kvfabric.tutorials.exercises`, in a scratch copy
of DIR (DIR itself is never written): the solution's files are put where the
student would write them, ``make run`` is started with PATH at the shims of
``kvfabric bmv2-shims`` and at the tutorials' venv (their Python packages), the
README's steps are typed at the Mininet prompt, and the README's expectation
is checked.  The tutorials' Makefiles, launcher and scripts run as they are.

Root, Mininet and the ports the launcher hard-codes (9090..., 50051...) are
needed; the run holds ``/tmp/kvfabric-root.lock`` from the first exercise to the last.  The
Makefile runs ``sudo``; where root has no ``sudo`` (a container), a private
``sudo`` that only runs its command (``env VAR=... CMD``) is put on PATH, which
is what root's sudo does.  A table of results is printed and, with
``--report``, written as Markdown; the exit status is 1 if any exercise fails.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import kvfabric
from kvfabric.commands.bmv2_shims import write_shims
from kvfabric.tutorials.exercises import EXERCISES, Exercise, Outcome, by_name
from kvfabric.tutorials.mininet_session import MininetSession, SessionError

LOCK = "/tmp/kvfabric-root.lock"
REPO = Path(kvfabric.__file__).resolve().parent.parent


@dataclass(frozen=True, slots=True)
class Result:
    """One exercise's verdict."""

    name: str
    passed: bool
    problems: tuple[str, ...]
    seconds: float


@contextmanager
def root_lock() -> Iterator[None]:
    with open(LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def prepare(tutorials: Path, scratch: Path, venv: Path) -> dict[str, str]:
    """Copy the tutorials, write the shims; the environment ``make run`` gets."""
    shutil.copytree(tutorials, scratch / "tutorials", ignore=shutil.ignore_patterns(".git"))
    bins = [str(p.parent) for p in write_shims(scratch / "bin", sys.executable, str(REPO))[:1]]
    bins.append(str(venv / "bin"))
    if shutil.which("sudo") is None and os.geteuid() == 0:
        sudo = scratch / "root-sudo" / "sudo"
        sudo.parent.mkdir()
        sudo.write_text(
            '#!/bin/sh\n# root without sudo: run the command as sudo would\nexec env "$@"\n'
        )
        sudo.chmod(0o755)
        bins.append(str(sudo.parent))
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env["PATH"] = ":".join([*bins, env.get("PATH", "/usr/bin:/bin")])
    return env


def place_solution(directory: Path, exercise: Exercise) -> None:
    """Put the solution's files where the student writes them."""
    for source in sorted((directory / "solution").iterdir()):
        if source.suffix == ".license" or not source.is_file():
            continue
        target = directory / exercise.solution_targets.get(source.name, source.name)
        shutil.copyfile(source, target)
        target.chmod(source.stat().st_mode)


def run_exercise(exercise: Exercise, root: Path, env: dict[str, str]) -> Result:
    """Run one exercise's README steps under Mininet and check them."""
    directory = root / "exercises" / exercise.name
    out = directory / "kvfabric-out"
    out.mkdir()
    place_solution(directory, exercise)
    start = time.monotonic()
    problems: list[str] = []
    session = MininetSession(["make", "run"], directory, env)
    try:
        session.read_until_prompt(600)
        for step in exercise.steps:
            try:
                session.command(step.format(out=out), timeout=180)
            except SessionError as exc:
                if session.proc.poll() is not None:
                    raise
                problems.append(str(exc))  # interrupted; the next steps still run
        status = session.exit()
        if status != 0:
            problems.append(f"make run exited with status {status}")
    except SessionError as exc:
        problems.append(str(exc))
        session.kill()
    transcript = session.transcript.decode("utf-8", "replace")
    (out / "transcript.txt").write_text(transcript)
    problems += exercise.check(Outcome(transcript, out))
    problems += switch_log_problems(directory / "logs")
    return Result(exercise.name, not problems, tuple(problems), time.monotonic() - start)


def switch_log_problems(logs: Path) -> list[str]:
    """Tracebacks in the switches' logs are failures whatever the packets did."""
    return [f"{log.name} has a Python traceback" for log in sorted(logs.glob("s*.log"))
            if "Traceback" in log.read_text(errors="replace")]  # fmt: skip


def table(results: Sequence[Result]) -> str:
    """The results as a Markdown table."""
    lines = ["| exercise | result | what differs from the README |", "|---|---|---|"]
    for r in results:
        lines.append(
            f"| {r.name} | {'passes' if r.passed else 'FAILS'} | {'; '.join(r.problems) or '-'} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kvfabric.tutorials.runner", description=__doc__)
    parser.add_argument("tutorials", type=Path, help="a checkout of p4lang/tutorials")
    parser.add_argument("--venv", type=Path, default=REPO / ".venv-tutorials")
    parser.add_argument("--only", default="", help="comma-separated exercise names")
    parser.add_argument("--report", type=Path, help="write the results table here")
    parser.add_argument("--keep", action="store_true", help="keep the scratch copy")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("the tutorials need root (Mininet)", file=sys.stderr)
        return 2
    if not (args.tutorials / "exercises").is_dir():
        print(f"{args.tutorials}: not a p4lang/tutorials checkout (no exercises/)", file=sys.stderr)
        return 2
    known = by_name()
    names = [n for n in args.only.split(",") if n] or [e.name for e in EXERCISES]
    unknown = [n for n in names if n not in known]
    if unknown:
        print(f"unknown exercises: {', '.join(unknown)}", file=sys.stderr)
        return 2
    scratch = Path(tempfile.mkdtemp(prefix="kvfabric-tutorials-"))
    try:
        env = prepare(args.tutorials, scratch, args.venv)
        with root_lock():  # one hold for the run: Mininet's fixed names and ports
            results = run_all([known[n] for n in names], scratch / "tutorials", env)
    finally:
        if args.keep:
            print(f"scratch copy kept in {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    print(table(results))
    if args.report is not None:
        args.report.write_text(table(results) + "\n")
    return 0 if all(r.passed for r in results) else 1


def run_all(exercises: Sequence[Exercise], root: Path, env: dict[str, str]) -> list[Result]:
    """Run ``exercises`` one after the other, printing each verdict."""
    results = []
    for exercise in exercises:
        result = run_exercise(exercise, root, env)
        verdict = "passes" if result.passed else "FAILS: " + "; ".join(result.problems)
        print(f"{exercise.name}: {verdict} ({result.seconds:.0f} s)", flush=True)
        results.append(result)
    return results


if __name__ == "__main__":
    sys.exit(main())
