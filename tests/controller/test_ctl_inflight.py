"""The shared bytes of transfers in flight, counted from running totals, against their
definition: the bytes of every pinned transfer that ran beside one (on either port of
its path) while it ran, each counted once."""

from __future__ import annotations

import random

from controller.config import Mode
from controller.engine.inflight import Choice, InFlight, InFlightTable
from controller.engine.selection import PathIndex
from controller.engine.updates import Decision
from controller.topology import LinkId, PortRef, SpinePath

LEAVES, SPINES = 3, 2


def _paths() -> list[PathIndex]:
    """Every leaf-to-leaf path of a small fabric, with the load-table indexes of its two
    egress ports: a leaf's uplink (0-5) and a spine's downlink (10-15)."""
    out = []
    for a in range(LEAVES):
        for b in range(LEAVES):
            for s in range(SPINES):
                if a == b:
                    continue
                up, down = PortRef(f"leaf{a}", s), PortRef(f"spine{s}", b)
                sp = SpinePath(f"leaf{a}", f"spine{s}", f"leaf{b}", up, down,
                               (LinkId(up, down), LinkId(up, down)))  # fmt: skip
                out.append(PathIndex(sp, a * SPINES + s, 10 + s * LEAVES + b))
    return out


def _transfer(tid: int, size: int, path: PathIndex | None, *, held: bool) -> InFlight:
    d = Decision(tid, f"kv-{tid}", "h1", "h2", size, Mode.KV_AWARE, None, None, None, "t",
                 held=held, start_at=1.0 if held else None)  # fmt: skip
    return InFlight(d, ("leaf0", "leaf1"), 0.0, 60.0, Choice(path=path, shared_bytes=7))


def test_shared_bytes_are_those_that_ran_beside_while_it_ran_each_counted_once() -> None:
    rng = random.Random(14)
    paths = _paths()
    inflight = InFlightTable()
    expected: dict[int, int] = {}
    running: dict[int, InFlight] = {}  # pinned and begun: what shares with what begins
    held: dict[int, InFlight] = {}
    live: set[int] = set()

    def ports(t: InFlight) -> set[int]:
        return {t.path.up, t.path.down} if t.path is not None else set()

    def begin(t: InFlight) -> None:
        for other in running.values():
            if ports(other) & ports(t):
                expected[other.id] += t.decision.bytes
        if t.path is not None:
            running[t.id] = t

    for tid in range(3000):
        roll = rng.random()
        if roll < 0.45 or not live:
            path = rng.choice(paths) if rng.random() < 0.9 else None
            t = _transfer(tid, rng.randint(1, 1000), path, held=rng.random() < 0.15)
            inflight.add(t)
            live.add(tid)
            expected[tid] = 7
            if t.began is None:
                held[tid] = t
            else:
                begin(t)
        elif roll < 0.55 and held:
            t = held.pop(rng.choice(sorted(held)))
            inflight.start(t, 1.0)  # released: it shares with those running beside it
            if t.path is not None:
                beside = (o.decision.bytes for o in running.values() if ports(o) & ports(t))
                expected[t.id] = sum(beside)
            begin(t)
        elif roll < 0.62 and running:
            t = running[rng.choice(sorted(running))]
            new = rng.choice(paths) if rng.random() < 0.7 else None
            if rng.random() < 0.1 and t.path is not None:  # onto ports nothing began on yet
                new = PathIndex(t.path.path, 100 + tid, 200 + tid)
            inflight.repin(t, new)  # moved off a dead cable: shares on its new path from now
            del running[t.id]
            if new is not None:
                running[t.id] = t
        else:
            gone = inflight.pop(rng.choice(sorted(live)))
            assert gone is not None
            live.discard(gone.id)
            running.pop(gone.id, None)
            held.pop(gone.id, None)
            assert gone.choice.shared_bytes == expected.pop(gone.id), gone.id
    for tid in sorted(live):
        gone = inflight.pop(tid)
        assert gone is not None and gone.choice.shared_bytes == expected[tid]
    assert len(inflight) == 0
