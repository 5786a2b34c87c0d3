"""gNMI's Subscribe: ONCE, POLL and STREAM (ON_CHANGE, SAMPLE, TARGET_DEFINED).

The first request of the stream is the subscription list; the leaves of each
subscription are chosen then (:meth:`Tree.select
<softswitch.switch.gnmi.tree.Tree.select>`), and their values are read afresh for
every message. Then, by the list's mode:

- ONCE: the values, ``sync_response``, and the stream ends;
- POLL: the values and ``sync_response``, and again after every ``poll`` request;
- STREAM: the values and ``sync_response``, then per subscription:

  - ON_CHANGE (and TARGET_DEFINED, which is ON_CHANGE for every leaf here: all are
    states that change by events): whenever :class:`~softswitch.switch.interfaces.Interfaces`
    says a port may have changed (a link notification, a speed set), the leaves whose
    value differs from the last one sent; a leaf that lost its value (an unknown speed)
    is deleted;
  - SAMPLE: every ``sample_interval`` (0: :data:`MIN_SAMPLE_NS`, the shortest this
    switch samples at; shorter is refused), every leaf, or with ``suppress_redundant``
    only those that changed;
  - ``heartbeat_interval``: every leaf at least that often, changed or not.

``updates_only`` leaves the first values out (``sync_response`` still comes). A
request after the first that is not a ``poll`` of a POLL subscription is an error
(INVALID_ARGUMENT), which ends the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from finsy.proto import gnmi

from softswitch.switch.gnmi.tree import GnmiError, Leaf, Scalar, Tree, check_encoding, join
from softswitch.switch.gnmi.tree import notification as make_notification

MIN_SAMPLE_NS = 100_000_000
"""The shortest sample interval (100 ms): sampling reads the kernel's state of every port."""

_LIST = gnmi.SubscriptionList
_SYNC = gnmi.SubscribeResponse(sync_response=True)


@dataclass(slots=True)
class _Group:
    """The leaves of one subscription and how they are sent."""

    leaves: list[Leaf]
    sample_ns: int | None
    """None: on change."""
    suppress: bool = False
    heartbeat_ns: int = 0
    sent: dict[Leaf, Scalar | None] = field(default_factory=dict)
    next_sample: int = 0
    next_beat: int = 0


class Subscription:
    """One Subscribe stream (see the module docstring)."""

    def __init__(self, tree: Tree, request: gnmi.SubscriptionList) -> None:
        check_encoding(request.encoding)
        if not request.subscription:
            raise GnmiError("INVALID_ARGUMENT", "a subscription list names at least one path")
        self.tree = tree
        self.mode = request.mode
        self.updates_only = request.updates_only
        self.target = request.prefix.target
        self.groups: list[_Group] = []
        prefix = request.prefix if request.HasField("prefix") else None
        for sub in request.subscription:
            leaves = tree.select(join(prefix, sub.path))
            sample: int | None = None
            if self.mode == _LIST.STREAM and sub.mode == gnmi.SubscriptionMode.SAMPLE:
                sample = sub.sample_interval or MIN_SAMPLE_NS
                if sample < MIN_SAMPLE_NS:
                    raise GnmiError(
                        "INVALID_ARGUMENT",
                        f"sample_interval {sub.sample_interval} ns is shorter than this "
                        f"switch samples ({MIN_SAMPLE_NS} ns)",
                    )
            group = _Group(leaves, sample, sub.suppress_redundant, sub.heartbeat_interval)
            self.groups.append(group)
        self._changed = asyncio.Event()
        self._polls: asyncio.Queue[GnmiError | None] = asyncio.Queue()

    @classmethod
    def open(cls, tree: Tree, first: gnmi.SubscribeRequest) -> Subscription:
        """The subscription a stream's first request asks for."""
        if first.WhichOneof("request") != "subscribe":
            raise GnmiError("INVALID_ARGUMENT", "a Subscribe stream starts with a 'subscribe'")
        return cls(tree, first.subscribe)

    def _on_change(self) -> None:
        self._changed.set()

    async def responses(
        self, requests: AsyncIterator[gnmi.SubscribeRequest]
    ) -> AsyncIterator[gnmi.SubscribeResponse]:
        """The stream's responses; ``requests`` are the client's after the first."""
        first = self._everything(initial=True)
        if first is not None:
            yield first
        yield _SYNC
        if self.mode == _LIST.ONCE:
            return
        reader = asyncio.create_task(self._read(requests))
        listeners = self.tree.interfaces.listeners
        listeners.append(self._on_change)
        try:
            if self.mode == _LIST.POLL:
                while True:
                    error = await self._polls.get()
                    if error is not None:
                        raise error
                    again = self._everything(initial=False)
                    if again is not None:
                        yield again
                    yield _SYNC
            else:
                async for response in self._stream():
                    yield response
        finally:
            listeners.remove(self._on_change)
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader

    async def _read(self, requests: AsyncIterator[gnmi.SubscribeRequest]) -> None:
        """The client's requests after the first: polls, or an error for anything else."""
        async for request in requests:
            if self.mode == _LIST.POLL and request.WhichOneof("request") == "poll":
                self._polls.put_nowait(None)
                continue
            what = request.WhichOneof("request") or "an empty request"
            mode = _LIST.Mode.Name(self.mode)
            error = GnmiError("INVALID_ARGUMENT", f"unexpected {what} on a {mode} subscription")
            self._polls.put_nowait(error)
            self._changed.set()
            return

    def _everything(self, *, initial: bool) -> gnmi.SubscribeResponse | None:
        """Every leaf's value (the first answer, or a poll's); None when there is nothing
        to send (``updates_only`` at first, or no leaf has a value)."""
        if initial and self.updates_only:
            for group in self.groups:
                group.sent = dict(self.tree.values(group.leaves))
            return None
        values: list[tuple[Leaf, Scalar | None]] = []
        for group in self.groups:
            now = self.tree.values(group.leaves)
            group.sent = dict(now)
            values += [(leaf, v) for leaf, v in now if v is not None]
        if not values:
            return None
        return gnmi.SubscribeResponse(update=make_notification(values, self.target))

    async def _stream(self) -> AsyncIterator[gnmi.SubscribeResponse]:
        start = time.monotonic_ns()
        for group in self.groups:
            if group.sample_ns is not None:
                group.next_sample = start + group.sample_ns
            if group.heartbeat_ns:
                group.next_beat = start + group.heartbeat_ns
        while True:
            await self._wait(self._next_due())
            if not self._polls.empty():
                error = self._polls.get_nowait()
                if error is not None:
                    raise error
            changed = self._changed.is_set()
            self._changed.clear()
            values: list[tuple[Leaf, Scalar | None]] = []
            now = time.monotonic_ns()
            for group in self.groups:
                values += self._due(group, now, changed)
            if values:
                yield gnmi.SubscribeResponse(update=make_notification(values, self.target))

    def _next_due(self) -> int | None:
        times = [g.next_sample for g in self.groups if g.sample_ns is not None]
        times += [g.next_beat for g in self.groups if g.heartbeat_ns]
        return min(times) if times else None

    async def _wait(self, due: int | None) -> None:
        """Until something changed, or ``due`` (monotonic ns) came."""
        if due is None:
            await self._changed.wait()
            return
        timeout = max(0.0, (due - time.monotonic_ns()) / 1e9)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), timeout)

    def _due(self, group: _Group, now: int, changed: bool) -> list[tuple[Leaf, Scalar | None]]:
        """What ``group`` sends now: on change, a sample, or a heartbeat (or nothing)."""
        beat = bool(group.heartbeat_ns) and now >= group.next_beat
        if beat:
            group.next_beat = now + group.heartbeat_ns
        if group.sample_ns is None:
            if not changed and not beat:
                return []
            send_all = beat
        else:
            if now < group.next_sample and not beat:
                return []
            while group.next_sample <= now:
                group.next_sample += group.sample_ns
            send_all = beat or not group.suppress
        out: list[tuple[Leaf, Scalar | None]] = []
        for leaf, value in self.tree.values(group.leaves):
            before = group.sent.get(leaf)
            if value != before or (send_all and value is not None):
                if value is None and before is None:
                    continue
                out.append((leaf, value))
            group.sent[leaf] = value
        return out
