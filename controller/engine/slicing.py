"""A transfer split over several spines: how many slices, which paths, how many bytes.

A KV cache leaves a 400 Gb/s NIC, but a pinned transfer runs on one path, and in the
design's racks a path is one 100 Gb/s cable: alone, it gets a quarter of its NIC.
Flowlet switching and several ECMP-hashed connections spread one transfer over
several cables; NIXL and Mooncake already move one KV cache over several connections
or QPs. A slice is one such connection, *placed*: its own spine, its own tag port
from that spine's range (so the leaves' static ranges steer it, with no write), and
its share of the bytes.

:func:`split` starts from the path the selection chose (hysteresis, reroute marks
and the cost bound have had their say) and adds the next cheapest candidates one at a
time, up to ``max_slices``. The bytes are shared in proportion to the rate each path
gives a new flow now (the fluid picture's share of its worse port), so that slices
end together if nothing changes; a slice smaller than :data:`MIN_SLICE_BYTES` is not
worth its connection. The transfer's expected completion is its slowest slice's
processor-sharing time (:meth:`Fluid.completion`), and never less than its bytes at
the source NIC's rate. A split is kept only while each slice added cuts the expected
completion by :data:`MIN_GAIN` or more: on a fabric whose other paths are loaded,
one path stays best, and a transfer is not split for nothing.

A transfer the scheduler holds (:mod:`schedule`) starts when its paths are free, so
its split is sized to the paths alone (:func:`split_alone`: each path's available
bandwidth, no one else's flows), and it keeps all of them for its duration.

Pure, like the rest of the engine.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from controller.engine.fluid import Fluid
from controller.engine.loads import LoadTable
from controller.engine.selection import PathIndex

MIN_SLICE_BYTES = 64 * 1024
"""The smallest slice worth a connection of its own."""

MIN_GAIN = 0.05
"""A slice more is kept only when it cuts the expected completion by this share."""


def auto_slices(nic_bps: float, uplink_bps: float) -> int:
    """Slices enough for a NIC of ``nic_bps`` over uplinks of ``uplink_bps`` (at least 1)."""
    if nic_bps <= 0 or uplink_bps <= 0:
        return 1
    return max(1, math.ceil(nic_bps / uplink_bps - 1e-9))


def split(
    candidates: Sequence[PathIndex],
    order: Sequence[int],
    size: int,
    now: float,
    *,
    fluid: Fluid,
    table: LoadTable,
    max_slices: int,
    nic_bps: float,
) -> tuple[list[tuple[int, int]], float]:
    """The slices of a transfer of ``size`` bytes: (candidate index, bytes) each, the
    first on ``order[0]`` (the selection's choice), and the expected completion in
    seconds. ``order`` ranks the candidates, best first."""
    first = order[0]
    best: list[tuple[int, int]] = [(first, size)]
    best_s = _expected(candidates, best, now, fluid, table=table, nic_bps=nic_bps)
    for m in range(2, min(max_slices, len(order)) + 1):
        chosen = list(order[:m])
        rates = [_rate(candidates[i], fluid) for i in chosen]
        total = sum(rates)
        if total <= 0:
            break
        sizes = [int(size * r / total) for r in rates]
        sizes[0] += size - sum(sizes)
        if min(sizes) < MIN_SLICE_BYTES:
            break
        plan = list(zip(chosen, sizes, strict=True))
        expected = _expected(candidates, plan, now, fluid, table=table, nic_bps=nic_bps)
        if expected > best_s * (1.0 - MIN_GAIN):
            break
        best, best_s = plan, expected
    return best, best_s


def _rate(c: PathIndex, fluid: Fluid) -> float:
    """What a new flow would get on the path now (bit/s): its worse port's share."""
    return min(fluid.share(c.up), fluid.share(c.down))


def _expected(
    candidates: Sequence[PathIndex],
    plan: Sequence[tuple[int, int]],
    now: float,
    fluid: Fluid,
    *,
    table: LoadTable,
    nic_bps: float,
) -> float:
    """The slowest slice's expected completion, at least the NIC's time for them all."""
    qdelay = table.qdelay_s
    worst = 0.0
    total = 0
    for i, nbytes in plan:
        c = candidates[i]
        t = fluid.completion((c.up, c.down), nbytes, now) + qdelay[c.up] + qdelay[c.down]
        worst = max(worst, t)
        total += nbytes
    if nic_bps > 0:
        worst = max(worst, 8.0 * total / nic_bps)
    return worst


def split_alone(
    candidates: Sequence[PathIndex],
    order: Sequence[int],
    size: int,
    *,
    table: LoadTable,
    max_slices: int,
    nic_bps: float,
) -> tuple[list[tuple[int, int]], float]:
    """The slices of a transfer that will run with its paths to itself (held until
    they are free): (candidate index, bytes) each, sized to the paths' available
    bandwidth, and its duration then. One slice when more do not cut it by
    :data:`MIN_GAIN`."""
    avail, qdelay = table.avail_bps, table.qdelay_s

    def rate(i: int) -> float:
        c = candidates[i]
        return min(avail[c.up], avail[c.down])

    def duration(plan: Sequence[tuple[int, int]]) -> float:
        worst = max(
            8.0 * b / rate(i) + qdelay[candidates[i].up] + qdelay[candidates[i].down]
            for i, b in plan
        )
        return max(worst, 8.0 * size / nic_bps) if nic_bps > 0 else worst

    ranked = sorted(order, key=lambda i: -rate(i))
    best: list[tuple[int, int]] = [(order[0], size)]
    best_s = duration(best)
    for m in range(2, min(max_slices, len(ranked)) + 1):
        chosen = ranked[:m]
        rates = [rate(i) for i in chosen]
        total = sum(rates)
        sizes = [int(size * r / total) for r in rates]
        sizes[0] += size - sum(sizes)
        if min(sizes) < MIN_SLICE_BYTES:
            break
        plan = list(zip(chosen, sizes, strict=True))
        d = duration(plan)
        if d > best_s * (1.0 - MIN_GAIN):
            break
        best, best_s = plan, d
    return best, best_s
