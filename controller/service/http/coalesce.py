"""Single path requests that arrive within a short window, decided as one batch.

A coordinator that sends its burst as 256 single ``POST /v1/transfers`` gets each
decided alone, each knowing only those before it. With ``api.coalesce_window`` (the
fabric file; default 0: off) the first single request opens a window of that length;
every single request that arrives in it waits, and at its end they go to the engine
together (``Service.decide_batch``, as ``POST /v1/transfers/batch`` does): each
request's answer is what it would have been as a member of that batch, its own
refusal included. A window fills at :data:`BATCH_MAX` requests and is decided at once
then. The price is the wait: every request waits up to the window.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from controller.engine import Update
from controller.service.http import schema

BATCH_MAX = 512
"""The most requests one window decides (the batch endpoint's limit)."""

Decide = Callable[
    [Sequence[schema.TransferRequest]],
    tuple[list[schema.TransferAnswer | Exception], list[Update]],
]
Apply = Callable[[list[Update]], Awaitable[object]]
Waiting = list[tuple[schema.TransferRequest, "asyncio.Future[schema.TransferAnswer]"]]
"""The requests of a window, each with the future its handler awaits."""


class Coalescer:
    """The open window and its waiting requests (one per API server)."""

    def __init__(self, window_s: float, decide: Decide, apply: Apply) -> None:
        self.window_s = window_s
        self.decide = decide
        self.apply = apply
        self.windows = 0
        """Windows decided so far (a test and a metric read it)."""
        self._waiting: list[
            tuple[schema.TransferRequest, asyncio.Future[schema.TransferAnswer]]
        ] = []
        self._timer: asyncio.TimerHandle | None = None
        self._applying: set[asyncio.Task[None]] = set()

    async def ask(self, ask: schema.TransferRequest) -> schema.TransferAnswer:
        """The answer to ``ask`` once its window is decided (its refusal raised)."""
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[schema.TransferAnswer] = loop.create_future()
        if not self._waiting:
            self._timer = loop.call_later(self.window_s, self._decide)
        self._waiting.append((ask, answer))
        if len(self._waiting) >= BATCH_MAX:
            self._decide()
        return await answer

    def _decide(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        waiting, self._waiting = self._waiting, []
        if not waiting:
            return
        self.windows += 1
        try:
            outcomes, rest = self.decide([ask for ask, _ in waiting])
        except Exception as exc:  # noqa: BLE001 (a bug: every request answers the 500)
            for _, answer in waiting:
                answer.set_exception(exc)
            return
        if not rest:
            _settle(waiting, outcomes)
            return
        task = asyncio.ensure_future(self._after(rest, waiting, outcomes))
        self._applying.add(task)
        task.add_done_callback(self._applying.discard)

    async def _after(
        self,
        rest: list[Update],
        waiting: Waiting,
        outcomes: list[schema.TransferAnswer | Exception],
    ) -> None:
        """Apply what the decisions left to write, then answer (as a single request's
        answer waits for its writes)."""
        try:
            await self.apply(rest)
        except Exception as exc:  # noqa: BLE001 (the write's error is every request's)
            for _, answer in waiting:
                if not answer.done():
                    answer.set_exception(exc)
            return
        _settle(waiting, outcomes)


def _settle(waiting: Waiting, outcomes: list[schema.TransferAnswer | Exception]) -> None:
    for (_, answer), outcome in zip(waiting, outcomes, strict=True):
        if answer.done():  # its client went away
            continue
        if isinstance(outcome, Exception):
            answer.set_exception(outcome)
        else:
            answer.set_result(outcome)
