"""From raw port counters to link load: pure functions, no clock, no I/O.

A switch's telemetry for one egress port is a :class:`PortCounters` read: cumulative
bytes and packets sent, cumulative bytes of the KV class, and the deepest queue seen
since the previous read (the data plane resets it on read). Two reads make a
sample:

    rate        = delta(bytes) * 8 / dt                       bit/s
    utilisation = rate / capacity, clamped to [0, 1]
    background  = (delta(bytes) - delta(kv_bytes)) * 8 / dt / capacity
    queue delay = max depth (packets) * mean packet size * 8 / capacity

The *background* utilisation leaves out the KV traffic: the decision engine counts
the KV transfers it placed itself (their bytes in flight), and counting them twice
would make a spine look busier the longer a transfer on it runs.

Utilisations are smoothed with an exponential average whose weight follows the time
between samples, ``w = 1 - exp(-dt / tau)``, so that a late poll weighs more than an
early one and the average forgets at the same rate whatever the poll interval.
:func:`advance` folds one read into a :class:`PortState`; everything else here is a
helper it uses, exposed for tests and for the I/O layer's metrics.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

DEFAULT_PACKET_BYTES = 1500
"""Packet size assumed for queue delay before a port has sent anything."""


@dataclass(frozen=True, slots=True)
class PortCounters:
    """One read of an egress port: cumulative counters and the max queue depth since."""

    bytes: int
    packets: int
    kv_bytes: int | None = None
    queue_depth: int | None = None


@dataclass(frozen=True, slots=True)
class PortState:
    """What the controller knows of one egress port after its latest read.

    ``util`` and ``bg_util`` are smoothed; ``raw_util`` is the last sample alone.
    ``sent_bytes`` and ``kv_sent_bytes`` accumulate the counter deltas of all bytes
    and of the KV class's (they survive a counter reset). ``sampled`` is False until
    two reads made a first sample.
    """

    time: float
    counters: PortCounters
    sampled: bool = False
    util: float = 0.0
    bg_util: float = 0.0
    raw_util: float = 0.0
    queue_delay_s: float = 0.0
    packet_bytes: float = DEFAULT_PACKET_BYTES
    sent_bytes: int = 0
    kv_sent_bytes: int = 0


def counter_delta(prev: int, cur: int, width_bits: int = 64) -> int:
    """How much a cumulative counter grew; a wrap is unwrapped, a reset restarts at 0.

    A counter that went down either wrapped (it was near its maximum: the unwrapped
    growth is small) or was reset (the switch restarted: it grew by ``cur`` since).
    """
    if cur >= prev:
        return cur - prev
    wrapped = cur + (1 << width_bits) - prev
    return wrapped if wrapped < (1 << (width_bits - 1)) else cur


def rate_bps(delta_bytes: int, dt_s: float) -> float:
    """Bits per second of ``delta_bytes`` sent in ``dt_s`` seconds."""
    if dt_s <= 0:
        raise ValueError("a rate needs a positive interval")
    return delta_bytes * 8 / dt_s


def utilisation(bps: float, capacity_bps: float) -> float:
    """``bps / capacity``, clamped to [0, 1] (read jitter can overshoot a full link)."""
    return min(1.0, max(0.0, bps / capacity_bps))


def smoothing_weight(dt_s: float, tau_s: float) -> float:
    """Weight of a new sample taken ``dt_s`` after the previous one; 1 when tau is 0."""
    if tau_s <= 0:
        return 1.0
    return 1.0 - math.exp(-max(0.0, dt_s) / tau_s)


def ewma(prev: float, sample: float, weight: float) -> float:
    """The exponential average moved ``weight`` of the way from ``prev`` to ``sample``."""
    return prev + weight * (sample - prev)


def mean_packet_bytes(delta_bytes: int, delta_packets: int, fallback: float) -> float:
    """Mean size of the packets of an interval; ``fallback`` when none were sent."""
    return delta_bytes / delta_packets if delta_packets > 0 else fallback


def queue_delay_s(depth_packets: int, packet_bytes: float, capacity_bps: float) -> float:
    """Time to drain ``depth_packets`` packets of ``packet_bytes`` at ``capacity_bps``."""
    return max(0, depth_packets) * packet_bytes * 8 / capacity_bps


def is_stale(last_sample: float | None, now: float, limit_s: float) -> bool:
    """True when there is no sample or the last one is older than ``limit_s``."""
    return last_sample is None or now - last_sample > limit_s


def advance(
    state: PortState | None,
    counters: PortCounters,
    now: float,
    capacity_bps: float,
    tau_s: float,
) -> PortState:
    """The port's state after the read ``counters`` taken at ``now``.

    The first read only sets the reference; a read with no time elapsed or earlier
    than the last one is ignored (the previous state is returned).
    """
    if state is None:
        return PortState(now, counters)
    dt = now - state.time
    if dt <= 0:
        return state
    prev = state.counters
    d_bytes = counter_delta(prev.bytes, counters.bytes)
    d_packets = counter_delta(prev.packets, counters.packets)
    d_kv = 0
    if counters.kv_bytes is not None and prev.kv_bytes is not None:
        d_kv = min(d_bytes, counter_delta(prev.kv_bytes, counters.kv_bytes))
    raw = utilisation(rate_bps(d_bytes, dt), capacity_bps)
    raw_bg = utilisation(rate_bps(d_bytes - d_kv, dt), capacity_bps)
    pkt = mean_packet_bytes(d_bytes, d_packets, state.packet_bytes)
    qdelay = (
        queue_delay_s(counters.queue_depth, pkt, capacity_bps)
        if counters.queue_depth is not None
        else 0.0
    )
    if state.sampled:
        w = smoothing_weight(dt, tau_s)
        util, bg = ewma(state.util, raw, w), ewma(state.bg_util, raw_bg, w)
    else:
        util, bg = raw, raw_bg
    return PortState(
        time=now,
        counters=counters,
        sampled=True,
        util=util,
        bg_util=bg,
        raw_util=raw,
        queue_delay_s=qdelay,
        packet_bytes=pkt,
        sent_bytes=state.sent_bytes + d_bytes,
        kv_sent_bytes=state.kv_sent_bytes + d_kv,
    )


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) with linear interpolation; values need not be sorted."""
    if not values:
        raise ValueError("a percentile of no values")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)
