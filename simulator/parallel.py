"""A scenario's runs (each mode, each repeat) side by side in worker processes.

Every run is independent: its own engine over the schedule of its seed, the same
transfers whatever runs beside it. ``kvfabric simulate --jobs N`` (default: the CPUs
this process may use) runs them in ``N`` forked processes (:func:`run_parallel`,
called by :func:`simulator.run.simulate`), which inherit the function that runs one
and the workload it closes over (nothing is pickled on the way in but the run's name;
each result comes back pickled, as a Dask sweep's tasks do). The workers count
finished transfers in one shared counter that the parent reads for the progress
line; results come back in the order of the runs asked for, so the document is the
same as a serial run's (wall and CPU times aside).
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from multiprocessing.sharedctypes import Synchronized
from typing import Any, TypeVar, cast

K = TypeVar("K", bound=Hashable)
R = TypeVar("R")

RunOne = Callable[[Any, Callable[[], None]], Any]
"""Runs one run (its name, and what to call at each finished transfer); its result."""

_POLL_S = 0.2

_run_one: RunOne | None = None
_done: Synchronized[int] | None = None


def default_jobs() -> int:
    """The CPUs this process may run on."""
    return len(os.sched_getaffinity(0))


def run_parallel(
    runs: Sequence[K],
    run_one: Callable[[K, Callable[[], None]], R],
    *,
    jobs: int,
    on_transfer: Callable[[], None] | None = None,
    on_stage: Callable[[str], None] | None = None,
) -> list[R]:
    """``run_one(run, count)`` for each of ``runs`` on ``jobs`` forked worker processes;
    the results in ``runs``' order. A run's error stops the whole, as it would serially."""
    context = mp.get_context("fork")
    done = context.Value("q", 0)
    jobs = max(1, min(jobs, len(runs)))
    with ProcessPoolExecutor(
        jobs, mp_context=context, initializer=_adopt, initargs=(run_one, done)
    ) as pool:
        futures: list[Future[R]] = [pool.submit(cast(Callable[[K], R], _run), run) for run in runs]
        names = {f: str(run) for f, run in zip(futures, runs, strict=True)}
        pending, seen = set(futures), 0
        while pending:
            finished, pending = wait(pending, timeout=_POLL_S, return_when=FIRST_COMPLETED)
            for f in finished:
                f.result()
            seen = _report(done.value, seen, on_transfer)
            if finished and on_stage is not None:
                on_stage(
                    f"{len(runs) - len(pending)}/{len(runs)} runs done on {jobs} processes "
                    f"(last: {', '.join(sorted(names[f] for f in finished))})"
                )
        _report(done.value, seen, on_transfer)
        return [f.result() for f in futures]


def _report(count: int, seen: int, on_transfer: Callable[[], None] | None) -> int:
    if on_transfer is not None:
        for _ in range(count - seen):
            on_transfer()
    return count


def _adopt(run_one: RunOne, done: Synchronized[int]) -> None:
    """A worker's start: the parent's function (inherited by the fork)."""
    global _run_one, _done
    _run_one, _done = run_one, done


def _count() -> None:
    assert _done is not None
    with _done.get_lock():
        _done.value += 1


def _run(run: object) -> object:
    assert _run_one is not None
    return _run_one(run, _count)
