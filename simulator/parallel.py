"""A scenario's runs (each mode, each repeat) side by side in worker processes.

Every run is independent: its own engine over the schedule of its seed, the same
transfers whatever runs beside it. ``kvfabric simulate --jobs N`` (default: the CPUs
this process may use) runs them in ``N`` forked processes, which inherit the workload
already built (nothing is pickled on the way in; each run's :class:`ModeResult` comes
back pickled, as a Dask sweep's tasks do). The workers count finished transfers in one
shared counter that the parent reads for the progress line; results are recorded in
the order a serial run makes, so the document is the same either way (wall and CPU
times aside).
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from multiprocessing.sharedctypes import Synchronized

from experiment.arrivals import Schedule
from simulator.run import ModeResult, run_mode
from simulator.workload import Workload

Run = tuple[int, str]
"""A run: the repeat (from 1) and the mode."""

_POLL_S = 0.2

_work: Workload | None = None
_schedules: dict[int, Schedule] = {}
_done: Synchronized[int] | None = None


def default_jobs() -> int:
    """The CPUs this process may run on."""
    return len(os.sched_getaffinity(0))


def run_parallel(
    work: Workload,
    schedules: dict[int, Schedule],
    runs: Sequence[Run],
    *,
    jobs: int,
    engine: str,
    on_transfer: Callable[[], None] | None = None,
    on_stage: Callable[[str], None] | None = None,
) -> list[ModeResult]:
    """Each of ``runs`` on ``jobs`` worker processes; the results in ``runs``' order."""
    context = mp.get_context("fork")
    done = context.Value("q", 0)
    jobs = max(1, min(jobs, len(runs)))
    with ProcessPoolExecutor(
        jobs, mp_context=context, initializer=_adopt, initargs=(work, schedules, done)
    ) as pool:
        futures: list[Future[ModeResult]] = [
            pool.submit(_run, repeat, mode, engine) for repeat, mode in runs
        ]
        names = {
            f: f"{mode}, repeat {repeat}" for f, (repeat, mode) in zip(futures, runs, strict=True)
        }
        pending, seen = set(futures), 0
        while pending:
            finished, pending = wait(pending, timeout=_POLL_S, return_when=FIRST_COMPLETED)
            for f in finished:
                f.result()  # a run's error stops the whole, as it would serially
            seen = _report(done.value, seen, on_transfer)
            if finished and on_stage is not None:
                running = len(runs) - len(pending)
                on_stage(
                    f"{running}/{len(runs)} runs done on {jobs} processes "
                    f"(last: {', '.join(sorted(names[f] for f in finished))})"
                )
        _report(done.value, seen, on_transfer)
        return [f.result() for f in futures]


def _report(count: int, seen: int, on_transfer: Callable[[], None] | None) -> int:
    if on_transfer is not None:
        for _ in range(count - seen):
            on_transfer()
    return count


def _adopt(work: Workload, schedules: dict[int, Schedule], done: Synchronized[int]) -> None:
    """A worker's start: the parent's workload and schedules (inherited by the fork)."""
    global _work, _schedules, _done
    _work, _schedules, _done = work, schedules, done


def _count() -> None:
    assert _done is not None
    with _done.get_lock():
        _done.value += 1


def _run(repeat: int, mode: str, engine: str) -> ModeResult:
    assert _work is not None
    return run_mode(
        _work, _schedules[repeat], mode, repeat=repeat, engine=engine, on_transfer=_count
    )
