"""The leaves' ledgers kept in step with the transfers in flight, and read back.

:mod:`ledger` says what a ledger is (records in the range entries' metadata) and how a
:class:`~controller.service.southbound.ledger.Book` keeps them encoded;
:class:`LedgerKeeper` keeps this controller's:

- :meth:`LedgerKeeper.write`, every poll interval: what every provisioned leaf's ledger
  must hold now (one record per tag a transfer holds: a transfer split over spines has
  one per slice, with the slice's bytes; the engine's transfers in flight by engine id
  and slice, a move changing the record's spine; the adopted ones by API id and slice),
  built a few at a time
  (:data:`LEDGER_SLICE`) with the requests that came meanwhile answered in between,
  and written where it changed (one Write per leaf), skipped when nothing came, went
  or moved since the last write;
- :meth:`LedgerKeeper.of`, when a leaf is reconciled: its ledger at once (a
  reconciliation cannot wait);
- :meth:`LedgerKeeper.adopt`, when a leaf is reconciled: the transfers its ledger holds
  that this controller does not know (not its own, not adopted or ended already)
  become :class:`~controller.service.southbound.adopt.Adopted` transfers; those past
  their deadline are remembered for a late completion only;
- :meth:`LedgerKeeper.flush`, on a clean stop: one last write, best effort.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from controller.engine import Engine
from controller.errors import SwitchError
from controller.service.metrics import Metrics
from controller.service.southbound import intent, ledger
from controller.service.southbound.adopt import Adoptions
from controller.service.southbound.enforce import Enforcer
from controller.service.southbound.pins import Pin, PinKey, PinMeta, api_id, instance_of
from controller.service.southbound.switches import SwitchLink
from controller.service.translog import TransferLog

LEDGER_SLICE = 8
"""Ledger records built between two turns of the event loop (about 15 us each)."""

Key = tuple[int | str, int]
"""A ledger record's key: (engine id or adopted API id, slice number)."""

Ledgers = dict[str, dict[ledger.RangeKey, bytes]]
"""Every leaf's ledger: by leaf, the metadata of each range entry that has records."""


class LedgerKeeper:
    """This controller's ledgers on the leaves (see the module docstring)."""

    def __init__(
        self,
        engine: Engine,
        enforcer: Enforcer,
        adoptions: Adoptions,
        metrics: Metrics,
        translog: TransferLog,
        *,
        instance: str,
        enabled: bool = True,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        """``enabled`` False: nothing is written (the transfers' records are still read
        back and adopted)."""
        self.engine = engine
        self.enforcer = enforcer
        self.adoptions = adoptions
        self.metrics = metrics
        self.translog = translog
        self.instance = instance
        self.enabled = enabled
        self.clock = clock
        self.wall = wall
        self._book = ledger.Book[Key]()
        self._stamp: tuple[object, ...] = ()

    # -- writing --------------------------------------------------------------------------

    async def write(self, links: Mapping[str, SwitchLink], provisioned: Iterable[str]) -> None:
        """Bring the ledger of every leaf of ``links`` that is ``provisioned`` up to date
        (when anything changed since the last write every leaf took)."""
        if not self.enabled:
            return
        e, done = self.engine, set(provisioned)
        counts = e.totals()
        stamp = (counts.decisions, counts.completed, counts.timeouts, counts.moved,
                 len(self.adoptions), tuple(sorted(done)))  # fmt: skip
        if stamp == self._stamp:
            return
        ledgers = await self._ledgers()
        leaves = [links[leaf] for leaf in e.topology.leaves if leaf in done]
        written = await asyncio.gather(*(
            self.enforcer.write_ledger(link, ledgers.get(link.name, {}))
            for link in leaves if link.primary
        ))  # fmt: skip
        # a leaf skipped because it is not (yet) primary is written at the next poll
        if len(written) == len(leaves) and all(written):
            self._stamp = stamp

    async def flush(
        self, links: Mapping[str, SwitchLink], provisioned: Iterable[str], timeout_s: float = 1.0
    ) -> None:
        """On a clean stop: :meth:`write` one last time (the completions since the last
        poll), within ``timeout_s``; best effort."""
        with contextlib.suppress(SwitchError, TimeoutError):
            await asyncio.wait_for(self.write(links, provisioned), timeout_s)

    def of(self, leaf: str) -> dict[ledger.RangeKey, bytes]:
        """``leaf``'s ledger at once, all records built now (for a reconciliation)."""
        return self._book.sync(*self._versions()).get(leaf, {})

    async def _ledgers(self) -> Ledgers:
        """What every leaf's ledger must hold now. Only the records of transfers new since
        the last call, or moved, are built (:class:`ledger.Book`), :data:`LEDGER_SLICE` at
        a time with the requests that came meanwhile answered in between; a transfer
        decided meanwhile is filed at the next call, one that ended meanwhile is left out."""
        book, (versions, build) = self._book, self._versions()
        changes = book.changes(versions)
        for k in range(0, len(changes), LEDGER_SLICE):
            if k:
                await asyncio.sleep(0)
            book.file(changes[k : k + LEDGER_SLICE], build)
        return book.ledgers()

    def _versions(
        self,
    ) -> tuple[dict[Key, object], Callable[[Key], ledger.Placed | None]]:
        """The ledger's keys with their versions, and the function building a record."""
        versions: dict[Key, object] = {}
        versions.update(self.engine.in_flight_paths())
        versions.update(
            {
                (aid, k): pin
                for aid, a in self.adoptions.by_id.items()
                for k, pin in enumerate(a.pins)
            }
        )
        offset = self.wall() - self.clock()
        return versions, lambda key: self._record(key, offset)

    def _record(self, key: Key, offset: float) -> ledger.Placed | None:
        """The ledger record of a slice of an engine transfer (int id) or of an adopted
        one (str id), with its source leaf and range entry; None when it holds no tag of
        a spine."""
        e = self.engine
        topo = e.topology
        owner, k = key
        if isinstance(owner, str):
            a = self.adoptions.by_id.get(owner)
            if a is None or k >= len(a.pins):  # it ended while the ledger was being built
                return None
            pin = a.pins[k]
            spine = e.spine_of(pin.key.src_port)
            dst = topo.hosts.get(pin.meta.dst)
            if spine is None or dst is None:
                return None
            entry = (intent.group_id(topo, dst.leaf), spine)
            return pin.key.leaf, entry, ledger.Record(pin.meta, pin.key.src_port)
        t = e.transfer(owner)
        if t is None:  # it ended while the ledger was being built
            return None
        d = t.decision
        tags = d.tags
        if d.local or k >= len(tags):
            return None
        port = tags[k].src_port
        spine = e.spine_of(port)
        if spine is None:
            return None
        now_on = t.slices[k] if k < len(t.slices) else None
        size = d.slices[k].bytes if d.slices else d.bytes
        meta = PinMeta(api_id(self.instance, d.transfer_id), d.trace_id, d.src, d.dst, size,
                       t.requested + offset, t.deadline + offset,
                       now_on.spine if now_on is not None else spine)  # fmt: skip
        entry = (intent.group_id(topo, t.pair[1]), spine)
        return t.pair[0], entry, ledger.Record(meta, port)

    # -- reading back ---------------------------------------------------------------------

    def adopt(self, link: SwitchLink, ranges: Iterable[Any]) -> None:
        """Adopt the transfers of a leaf's ledger (its range entries' metadata) that this
        controller does not know: not its own, not adopted or ended already. Those past
        their deadline are remembered for a late completion only."""
        now, wall = self.clock(), self.wall()
        topo = self.engine.topology
        for entry in ranges:
            port = int(entry.action.args["port"]) if entry.action is not None else 0
            for record in ledger.decode(bytes(entry.metadata)) or ():
                meta = record.meta
                if self._known(meta.id) or meta.src not in topo.hosts or meta.dst not in topo.hosts:
                    continue
                src, dst = topo.hosts[meta.src], topo.hosts[meta.dst]
                pin = Pin(PinKey(link.name, src.ipv4, dst.ipv4, record.port), port, meta)
                if meta.deadline_wall <= wall:
                    self.adoptions.remember_timed_out(pin)
                    self.metrics.pins_removed_stale.labels(link.name).inc()
                    continue
                self.adoptions.adopt(pin, now, wall)
                self.metrics.pins_adopted.labels(link.name).inc()
                self.translog.write(
                    "adopted",
                    {"time": now, "id": meta.id, "trace_id": meta.trace_id, "pin": str(pin.key),
                     "spine": meta.spine, "deadline_s": meta.deadline_wall - wall},
                )  # fmt: skip

    def _known(self, transfer_id: str) -> bool:
        """True for a transfer this controller decided, adopted, or saw end."""
        a = self.adoptions
        return (
            instance_of(transfer_id) == self.instance
            or transfer_id in a.by_id
            or transfer_id in a.ended
            or transfer_id in a.timed_out
        )
