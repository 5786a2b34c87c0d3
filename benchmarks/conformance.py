"""How faithfully the softswitch behaves compared with p4c + BMv2, on p4c's own tests.

Run: ``.venv/bin/python -m benchmarks.conformance --testdata DIR [--jobs N]
[--only GLOB] [--v1model] [--timeout S] [--verbose]`` (``DIR`` defaults to
``$KVFABRIC_P4C_TESTDATA``; ``--v1model`` keeps the programs that include
``v1model.p4``, whose STF tests p4c runs on BMv2).

``DIR`` is laid out like p4c's ``testdata``: ``p4_16_samples/X.p4`` with its
STF test ``X.stf`` and the files it includes, and
``p4_16_samples_outputs/X.p4.p4info.txtpb``, the P4Info that p4c wrote for it.
Every program is measured in two independent ways, each in its own
``kvfabric`` subprocess with a timeout, so that a crash or a hang costs one
program and not the run:

* STF: ``kvfabric stf X.p4 X.stf -I DIR`` (with ``--load-modules`` for the
  programs whose p4c test loads a module of extern functions into BMv2:
  :data:`EXTERN_MODULES`, from ``extern_modules/``); exit 0 is *pass*, 1 *mismatch*,
  2 *error* (the program does not compile, uses an unsupported feature, or the
  STF file has a line we cannot run), anything else or the timeout *crash*.
* P4Info: ``kvfabric compile X.p4 --p4runtime-files OUT.txtpb``, compared with
  p4c's file byte for byte (*identical*); when the bytes differ both are parsed
  as ``p4.config.v1.P4Info`` messages, which tells a formatting miss
  (*format*: equal messages) from a content miss (*content*: the first field
  path that differs is reported). A failed compile is *error*, anything else
  *crash*.

Every failure gets a first error line, and a grouping key made from it with
the file locations cut and the numbers replaced by ``N``; the report lists the
groups largest first, so that the most common causes of failure lead. The last
line of output is one JSON object with the headline numbers.

The classification and the grouping are pure functions of a subprocess's exit
status and output (:func:`classify_stf`, :func:`classify_p4info`,
:func:`group_failures`), so they can be tested on a tiny testdata directory.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from finsy.proto import p4i
from google.protobuf import text_format
from google.protobuf.message import Message

SAMPLES = "p4_16_samples"
OUTPUTS = "p4_16_samples_outputs"
P4INFO_SUFFIX = ".p4info.txtpb"
DEFAULT_TIMEOUT = 60.0

STF_OUTCOMES = ("pass", "mismatch", "error", "crash")
P4INFO_OUTCOMES = ("identical", "format", "content", "error", "crash")
PASSING = frozenset({"pass", "identical"})

# The modules p4c's BMv2 tests load into simple_switch (backends/bmv2/CMakeLists.txt:
# --target-specific-switch-arg="--load-modules ..."), as this target's Python files.
EXTERN_MODULE_DIR = Path(__file__).resolve().parent / "extern_modules"
EXTERN_MODULES: dict[str, tuple[str, ...]] = {
    "extern-funcs-bmv2": ("extern_funcs_bmv2.py",),
}

_LOCATION = re.compile(r"(?:[\w./+-]+\.(?:p4|stf|txtpb)|<[\w ]+>)(?::\d+)*:\s*")
_EXPECT_AT = re.compile(r"\s*\(expect at [^)]*\)")
_NUMBER = re.compile(r"\d+")
_INDEX = re.compile(r"\[\d+\]")


@dataclass(frozen=True, slots=True)
class Case:
    """One program of the testdata directory and the tests it has."""

    name: str
    program: Path
    stf: Path | None
    p4info: Path | None
    modules: tuple[Path, ...] = ()


@dataclass(frozen=True, slots=True)
class Result:
    """The outcome of one test of one program."""

    kind: str  # "stf" or "p4info"
    name: str
    outcome: str
    first_line: str = ""
    group: str = ""

    @property
    def passed(self) -> bool:
        """True for the outcomes that count as conformant."""
        return self.outcome in PASSING


@dataclass(frozen=True, slots=True)
class Run:
    """What one subprocess did: exit status (None on timeout) and its output."""

    returncode: int | None
    stdout: str
    stderr: str


# ---------------------------------------------------------------------------
# discovery


def discover(testdata: Path, only: str | None = None, *, v1model: bool = False) -> list[Case]:
    """Every ``X.p4`` of ``testdata/p4_16_samples`` that has an STF test or a P4Info,
    by name; ``only`` is a glob matched against ``X`` and ``X.p4``; ``v1model``
    keeps the programs that include ``v1model.p4`` (p4c runs their STF tests on
    BMv2's simple_switch)."""
    samples, outputs = testdata / SAMPLES, testdata / OUTPUTS
    cases: list[Case] = []
    for program in sorted(samples.glob("*.p4")):
        name = program.stem
        if only and not (fnmatch.fnmatch(name, only) or fnmatch.fnmatch(program.name, only)):
            continue
        if v1model and not _includes_v1model(program):
            continue
        stf = program.with_suffix(".stf")
        p4info = outputs / (program.name + P4INFO_SUFFIX)
        case = Case(
            name,
            program,
            stf if stf.is_file() else None,
            p4info if p4info.is_file() else None,
            tuple(EXTERN_MODULE_DIR / m for m in EXTERN_MODULES.get(name, ())),
        )
        if case.stf or case.p4info:
            cases.append(case)
    return cases


def _includes_v1model(program: Path) -> bool:
    try:
        return "v1model.p4" in program.read_text(errors="replace")
    except OSError:  # p4c's testdata has links to programs of other folders
        return False


# ---------------------------------------------------------------------------
# classification (pure)


def group_key(line: str) -> str:
    """The grouping key of a first error line: locations cut, numbers as N."""
    text = _EXPECT_AT.sub("", line)
    text = _LOCATION.sub("", text)
    return _NUMBER.sub("N", text).strip()


def _first_error(text: str) -> str:
    for line in text.splitlines():
        if "error" in line:
            return line.strip()
    return _last_line(text)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _first_mismatch(stdout: str) -> str:
    """The first failing packet or check of a ``kvfabric stf`` report."""
    lines = stdout.splitlines()
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("packet ") and not stripped.endswith(": ok"):
            return stripped
        if "check failed" in stripped:
            return stripped
    for line in lines:
        if "MISMATCH" in line or line.startswith("FAIL"):
            return line.strip()
    return _last_line(stdout)


def classify_stf(name: str, run: Run, timeout: float = DEFAULT_TIMEOUT) -> Result:
    """The outcome of ``kvfabric stf`` from its exit status and output."""
    if run.returncode is None:
        line = f"timeout after {timeout:g} s"
        return Result("stf", name, "crash", line, "timeout")
    if run.returncode == 0:
        return Result("stf", name, "pass")
    if run.returncode == 1:
        line = _first_mismatch(run.stdout) or _first_error(run.stderr)
        return Result("stf", name, "mismatch", line, group_key(line))
    if run.returncode == 2:
        line = _first_error(run.stderr) or _last_line(run.stdout)
        return Result("stf", name, "error", line, group_key(line))
    line = _last_line(run.stderr) or f"exit status {run.returncode}"
    return Result("stf", name, "crash", line, group_key(line))


def parse_p4info(text: str) -> p4i.P4Info:
    """A P4Info text file as a message; raises text_format.ParseError."""
    message = p4i.P4Info()
    text_format.Parse(text, message)
    return message


def first_difference(expected: Message, actual: Message, path: str = "") -> str | None:
    """The first field, in declaration order, where two messages differ, as
    ``path: expected X, got Y``; None when they are equal."""
    for field in expected.DESCRIPTOR.fields:
        where = f"{path}.{field.name}" if path else field.name
        want, got = getattr(expected, field.name), getattr(actual, field.name)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            found = None if dict(want) == dict(got) else f"{where}: map differs"
        elif field.is_repeated:
            found = _first_repeated_difference(list(want), list(got), where)
        elif field.message_type is not None:
            if expected.HasField(field.name) != actual.HasField(field.name):
                state = "set" if expected.HasField(field.name) else "unset"
                found = f"{where}: expected {state}, got the opposite"
            else:
                found = first_difference(want, got, where)
        else:
            found = None if want == got else f"{where}: expected {want!r}, got {got!r}"
        if found:
            return found
    return None


def _first_repeated_difference(want: list[object], got: list[object], where: str) -> str | None:
    for i, (a, b) in enumerate(zip(want, got, strict=False)):
        if isinstance(a, Message) and isinstance(b, Message):
            found = first_difference(a, b, f"{where}[{i}]")
            if found:
                return found
        elif a != b:
            return f"{where}[{i}]: expected {a!r}, got {b!r}"
    if len(want) != len(got):
        return f"{where}: expected {len(want)} elements, got {len(got)}"
    return None


def _first_different_line(expected: str, actual: str) -> str:
    want, got = expected.splitlines(), actual.splitlines()
    for i, (a, b) in enumerate(zip(want, got, strict=False)):
        if a != b:
            return f"line {i + 1}: expected {a!r}, got {b!r}"
    if len(want) != len(got):
        return f"expected {len(want)} lines, got {len(got)}"
    return "line endings or the final newline differ"


def classify_p4info(
    name: str, run: Run, expected: str, produced: str | None, timeout: float = DEFAULT_TIMEOUT
) -> Result:
    """The outcome of ``kvfabric compile`` against p4c's P4Info text ``expected``."""
    if run.returncode is None:
        return Result("p4info", name, "crash", f"timeout after {timeout:g} s", "timeout")
    if run.returncode == 1:
        line = _first_error(run.stderr)
        return Result("p4info", name, "error", line, group_key(line))
    if run.returncode != 0 or produced is None:
        line = _last_line(run.stderr) or f"exit status {run.returncode}, no output file"
        return Result("p4info", name, "crash", line, group_key(line))
    if produced == expected:
        return Result("p4info", name, "identical")
    try:
        want = parse_p4info(expected)
    except text_format.ParseError as exc:
        line = f"p4c's P4Info does not parse: {exc}"
        return Result("p4info", name, "content", line, "p4c's P4Info does not parse")
    try:
        got = parse_p4info(produced)
    except text_format.ParseError as exc:
        line = f"our P4Info does not parse: {exc}"
        return Result("p4info", name, "content", line, "our P4Info does not parse")
    difference = first_difference(want, got)
    if difference is None:
        line = _first_different_line(expected, produced)
        return Result("p4info", name, "format", line, "format: " + group_key(line))
    field = difference.partition(":")[0]
    return Result("p4info", name, "content", difference, "field " + _INDEX.sub("[]", field))


# ---------------------------------------------------------------------------
# running


def _execute(argv: Sequence[str], timeout: float) -> Run:
    try:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return Run(None, "", "")
    return Run(done.returncode, done.stdout, done.stderr)


def run_stf_case(case: Case, kvfabric: str, timeout: float) -> Result:
    """Run the STF test of ``case`` in a subprocess and classify it."""
    assert case.stf is not None
    argv = [kvfabric, "stf", str(case.program), str(case.stf), "-I", str(case.program.parent)]
    if case.modules:
        argv += ["--load-modules", ",".join(str(m) for m in case.modules)]
    return classify_stf(case.name, _execute(argv, timeout), timeout)


def run_p4info_case(case: Case, kvfabric: str, timeout: float) -> Result:
    """Compile ``case`` to P4Info text in a subprocess and compare with p4c's."""
    assert case.p4info is not None
    expected = case.p4info.read_text()
    with tempfile.TemporaryDirectory(prefix="kvfabric-conformance-") as tmp:
        out = Path(tmp) / (case.program.name + P4INFO_SUFFIX)
        argv = [kvfabric, "compile", str(case.program), "--p4runtime-files", str(out)]
        argv += ["-I", str(case.program.parent)]
        run = _execute(argv, timeout)
        produced = out.read_text() if out.is_file() else None
    return classify_p4info(case.name, run, expected, produced, timeout)


def run_case(case: Case, kvfabric: str, timeout: float) -> list[Result]:
    """Every test of one program."""
    results: list[Result] = []
    if case.stf:
        results.append(run_stf_case(case, kvfabric, timeout))
    if case.p4info:
        results.append(run_p4info_case(case, kvfabric, timeout))
    return results


def run_all(
    cases: Sequence[Case],
    kvfabric: str,
    *,
    jobs: int = 1,
    timeout: float = DEFAULT_TIMEOUT,
    progress: Callable[[int, int, Case, list[Result]], None] | None = None,
) -> list[Result]:
    """Run every case on ``jobs`` threads (each waits on its subprocess); results in
    case order. ``progress`` is called once per program as it finishes."""
    by_name: dict[str, list[Result]] = {}
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(run_case, case, kvfabric, timeout): case for case in cases}
        for done, future in enumerate(as_completed(futures), start=1):
            case = futures[future]
            by_name[case.name] = future.result()
            if progress:
                progress(done, len(cases), case, by_name[case.name])
    return [result for case in cases for result in by_name[case.name]]


# ---------------------------------------------------------------------------
# reporting (pure)


def counts(results: Iterable[Result], kind: str) -> Counter[str]:
    """Outcome -> number of results of ``kind``."""
    return Counter(r.outcome for r in results if r.kind == kind)


def group_failures(results: Iterable[Result]) -> list[tuple[str, str, list[Result]]]:
    """Failures as (kind, group key, results), largest group first, then by kind and key."""
    groups: dict[tuple[str, str], list[Result]] = {}
    for r in results:
        if not r.passed:
            groups.setdefault((r.kind, r.group), []).append(r)
    ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    return [(kind, key, members) for (kind, key), members in ordered]


def summary(results: Sequence[Result]) -> dict[str, int | float]:
    """The headline numbers of a run."""
    stf, p4info = counts(results, "stf"), counts(results, "p4info")
    stf_total, p4info_total = sum(stf.values()), sum(p4info.values())
    return {
        "stf_total": stf_total,
        "stf_pass": stf["pass"],
        "stf_pass_rate": round(stf["pass"] / stf_total, 4) if stf_total else 0.0,
        "p4info_total": p4info_total,
        "p4info_identical": p4info["identical"],
        "p4info_identical_rate": (
            round(p4info["identical"] / p4info_total, 4) if p4info_total else 0.0
        ),
        "p4info_equal_as_message": p4info["identical"] + p4info["format"],
    }


def format_table(results: Sequence[Result]) -> str:
    """Counts by outcome, one block per kind of test."""
    lines: list[str] = []
    for kind, outcomes in (("stf", STF_OUTCOMES), ("p4info", P4INFO_OUTCOMES)):
        c = counts(results, kind)
        total = sum(c.values())
        lines.append(f"{kind.upper():<8}{'outcome':<12}{'count':>6}{'share':>8}")
        for outcome in outcomes:
            share = f"{c[outcome] / total:.1%}" if total else "-"
            lines.append(f"{'':<8}{outcome:<12}{c[outcome]:>6}{share:>8}")
        lines.append(f"{'':<8}{'total':<12}{total:>6}")
    return "\n".join(lines)


def format_groups(results: Sequence[Result], *, verbose: bool = False) -> str:
    """The failures grouped by first error line, with one example per group
    (every member when ``verbose``)."""
    lines: list[str] = []
    for kind, key, members in group_failures(results):
        outcomes = ",".join(sorted({r.outcome for r in members}))
        lines.append(f"{len(members):>5}  {kind:<6} {outcomes:<14} {key}")
        for r in members if verbose else members[:1]:
            lines.append(f"{'':>7}e.g. {r.name}: {r.first_line}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# command line


def default_kvfabric() -> str:
    """The ``kvfabric`` script next to this interpreter, else the one on PATH."""
    beside = Path(sys.executable).parent / "kvfabric"
    if beside.is_file():
        return str(beside)
    return shutil.which("kvfabric") or "kvfabric"


def _print_progress(done: int, total: int, case: Case, results: list[Result]) -> None:
    verdicts = "  ".join(f"{r.kind}={r.outcome}" for r in results)
    print(f"[{done:>4}/{total}] {case.name:<48} {verdicts}", flush=True)


def _verbose_progress(done: int, total: int, case: Case, results: list[Result]) -> None:
    _print_progress(done, total, case, results)
    for r in results:
        if not r.passed:
            print(f"{'':>12}{r.kind}: {r.first_line}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print progress, tables, failure groups and a JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--testdata",
        type=Path,
        default=os.environ.get("KVFABRIC_P4C_TESTDATA"),
        help="p4c-style testdata directory (default: $KVFABRIC_P4C_TESTDATA)",
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel tests")
    parser.add_argument("--only", metavar="GLOB", help="only programs whose name matches")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds a test")
    parser.add_argument("--kvfabric", default=default_kvfabric(), help="the kvfabric script")
    parser.add_argument("--verbose", action="store_true", help="every failure, not one a group")
    parser.add_argument(
        "--v1model", action="store_true", help="only programs that include v1model.p4"
    )
    args = parser.parse_args(argv)
    if args.testdata is None:
        parser.error("no testdata: give --testdata or set KVFABRIC_P4C_TESTDATA")
    testdata = Path(args.testdata)
    if not (testdata / SAMPLES).is_dir():
        parser.error(f"{testdata}: no {SAMPLES}/ folder in it")
    cases = discover(testdata, args.only, v1model=args.v1model)
    stf_n = sum(1 for c in cases if c.stf)
    p4info_n = sum(1 for c in cases if c.p4info)
    print(f"{len(cases)} programs under {testdata}: {stf_n} STF tests, {p4info_n} P4Info files")
    progress = _verbose_progress if args.verbose else _print_progress
    results = run_all(cases, args.kvfabric, jobs=args.jobs, timeout=args.timeout, progress=progress)
    print()
    print(format_table(results))
    print()
    print("failures by first error line (largest group first):")
    print(format_groups(results, verbose=args.verbose) or "  none")
    print()
    print(json.dumps(summary(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
