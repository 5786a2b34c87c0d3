"""Adopting transfers in flight that another controller (or an earlier run) decided.

A restarted controller, or a backup that takes over, finds transfers in the leaves'
ledgers (:mod:`ledger`) that its engine never decided. It keeps them: each becomes an
:class:`Adopted` transfer, tracked until the sender reports completion (the API
accepts its id) or its deadline passes; its pin is its tag port's spine range, which
stays. A transfer found past its deadline is remembered like an adopted transfer that
timed out: a completion that comes late for either is recorded as late, never
refused. While it runs, its tag port is withheld from the engine's tag pool
(so no new transfer of the same pair can reuse it) and its bytes count on its two
ports in the engine's load table (so new transfers do not herd onto its spine).

The engine does the counting (:meth:`Engine.adopt` and :meth:`Engine.release`); this
module keeps the pins, their API ids and their deadlines.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from controller.engine import Engine
from controller.engine.inflight import Adoption
from controller.service.southbound.pins import Pin


@dataclass(slots=True)
class Adopted:
    """A transfer whose pins were found on a leaf, tracked until it ends: one pin per tag
    it holds (a transfer split over spines has one per slice, each with its bytes)."""

    pins: list[Pin]
    counted: list[Adoption]
    deadline: float
    adopted_at: float

    @property
    def pin(self) -> Pin:
        """Its first pin (its id, hosts and deadline are every pin's)."""
        return self.pins[0]

    @property
    def size(self) -> int:
        """The bytes of all its slices."""
        return sum(p.meta.size for p in self.pins)


class Adoptions:
    """The adopted transfers of one engine, by API id."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.by_id: dict[str, Adopted] = {}
        self.timed_out: dict[str, Pin] = {}
        """Pins of adopted transfers whose deadline passed, kept for a late completion."""
        self.ended: deque[str] = deque(maxlen=LATE_KEPT)
        """Ids of adopted transfers that completed (a ledger not yet rewritten may still
        hold them: they are not adopted again)."""

    def __len__(self) -> int:
        return len(self.by_id)

    def adopt(self, pin: Pin, now: float, wall_now: float) -> Adopted:
        """Track ``pin``'s transfer (or add the pin to it: another slice of a transfer
        adopted already); its deadline is carried over from the metadata."""
        meta = pin.meta
        counted, _ = self.engine.adopt(
            meta.src, meta.dst, meta.spine, meta.size, tag_port=pin.key.src_port, now=now
        )
        adopted = self.by_id.get(meta.id)
        if adopted is not None:
            if any(p.key == pin.key for p in adopted.pins):
                self.engine.release(counted, now)  # the same pin read twice
                return adopted
            adopted.pins.append(pin)
            adopted.counted.append(counted)
            return adopted
        adopted = Adopted(
            [pin],
            [counted],
            deadline=now + max(0.0, meta.deadline_wall - wall_now),
            adopted_at=now,
        )
        self.by_id[meta.id] = adopted
        return adopted

    def finish(self, transfer_id: str, now: float) -> Adopted | None:
        """Stop tracking a transfer (completed or timed out); its ports and load go back."""
        adopted = self.by_id.pop(transfer_id, None)
        if adopted is not None:
            for counted in adopted.counted:
                self.engine.release(counted, now)
            self.ended.append(transfer_id)
        return adopted

    def expired(self, now: float) -> list[Adopted]:
        """The adopted transfers whose deadline has passed (not yet finished)."""
        return [a for a in self.by_id.values() if a.deadline <= now]

    def time_out(self, transfer_id: str, now: float) -> Adopted | None:
        """Finish a transfer whose deadline passed, remembering it for a late completion."""
        adopted = self.finish(transfer_id, now)
        if adopted is not None:
            self.remember_timed_out(adopted.pin)
        return adopted

    def remember_timed_out(self, pin: Pin) -> None:
        """Keep ``pin`` (a transfer past its deadline, found or adopted) for a late completion."""
        self.timed_out[pin.meta.id] = pin
        while len(self.timed_out) > LATE_KEPT:
            del self.timed_out[next(iter(self.timed_out))]

    def late(self, transfer_id: str) -> Pin | None:
        """The pin of the timed-out transfer ``transfer_id`` (once), if it is remembered."""
        return self.timed_out.pop(transfer_id, None)


LATE_KEPT = 4096
"""Timed-out adopted transfers remembered for a late completion (the oldest go first)."""
