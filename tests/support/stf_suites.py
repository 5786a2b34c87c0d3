"""``make stf``: every STF suite of the source tree through kvfabric's own P4 target.

It prints one table row per test:
``p4/tests/*.stf`` against ``p4/kv_fabric.p4`` and each
``tests/stf/programs/NAME.stf`` against its ``NAME.p4``. The exit status is 0 only
when every test passes.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

from softswitch.errors import SoftswitchError
from softswitch.stf import run_stf

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True, slots=True)
class Case:
    """One STF test and the program it runs against."""

    program: Path
    stf: Path


@dataclass(frozen=True, slots=True)
class Outcome:
    """What running a case gave: a verdict word, packets sent and the time taken."""

    case: Case
    verdict: str
    detail: str
    seconds: float


def discover(root: Path = ROOT) -> list[Case]:
    """Every STF case of the tree, in a stable order."""
    cases: list[Case] = []
    fabric = root / "p4" / "kv_fabric.p4"
    if fabric.exists():
        cases += [Case(fabric, stf) for stf in sorted((root / "p4" / "tests").glob("*.stf"))]
    for stf in sorted((root / "tests" / "stf" / "programs").glob("*.stf")):
        program = stf.with_suffix(".p4")
        if program.exists():
            cases.append(Case(program, stf))
    return cases


def run_case(case: Case) -> Outcome:
    """Run one case; a located error is a verdict, not an exception."""
    start = time.perf_counter()
    try:
        result = run_stf(case.program, case.stf)
    except SoftswitchError as exc:
        return Outcome(case, "ERROR", str(exc).splitlines()[0], time.perf_counter() - start)
    verdict = "pass" if result.passed else "FAIL"
    detail = f"{result.packets_sent} packets in"
    return Outcome(case, verdict, detail, time.perf_counter() - start)


def render(outcomes: list[Outcome]) -> str:
    """A markdown table of the outcomes."""
    rows = ["| program | test | verdict | detail | time |", "|---|---|---|---|---|"]
    for o in outcomes:
        rows.append(
            f"| {o.case.program.relative_to(ROOT)} | {o.case.stf.name} | {o.verdict} "
            f"| {o.detail} | {o.seconds * 1000:.0f} ms |"
        )
    passed = sum(o.verdict == "pass" for o in outcomes)
    rows.append(f"\n{passed} passed, {len(outcomes) - passed} failed")
    return "\n".join(rows)


def main() -> int:
    """Run every case with a progress line, then print the table."""
    cases = discover()
    outcomes: list[Outcome] = []
    for i, case in enumerate(cases, 1):
        print(f"[{i}/{len(cases)}] {case.stf.relative_to(ROOT)}", file=sys.stderr, flush=True)
        outcomes.append(run_case(case))
    print(render(outcomes))
    return 0 if outcomes and all(o.verdict == "pass" for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
