"""Link liveness: when a lost probe means a dead link, and when it means a full queue.

A probe crosses the same tail-drop queue as the traffic. On a loaded link a good share
of probes is lost (about a third of them on the lab's 10-packet queues at 75% UDP
background plus a TCP transfer), so "one missed probe = down" takes healthy spines
out of path selection many times a minute, and every false verdict also rewrites the
ECMP groups, which moves the background traffic. A real fabric controller does what
LLDP does: a link is down only when its neighbour has been silent for a *hold time*
of several probe intervals; and it looks at the port counters, since a link whose far
end keeps receiving is not dead.

Each direction of a cable (named by the port its probes leave from) is judged after
every round. A probe from it seen at the expected port, in this round or late from an
earlier one, makes it up at once. A probe seen elsewhere makes it miswired at once.
When no probe from it was seen for ``misses`` rounds in a row (2 by default: with
eight switch processes and the controller sharing two cores, 5% of probes come back
after their 50 ms window and a few after 100 ms), the counters decide how long to
wait (:func:`counter_evidence`, over the last two poll intervals, every
switch's counters interpolated to the same two instants):

- **idle**: the sending port sent less than ``IDLE_SHARE`` of its capacity, less than
  a queue holds, so no queue could have dropped the probe: *down now*;
- **frozen**: the far end is a switch whose every input is a modelled cable (a spine),
  so flow conservation bounds from below what arrived through this cable (everything
  the far end sent, less what all its other neighbours sent it); the near end sent at
  least ``BUSY_SHARE`` of the capacity and that bound shows less than
  ``FROZEN_SHARE`` arriving, while no port of the far end ran at ``SATURATED_SHARE``
  of its capacity or more: *down now*. (A far end with a saturated output may drop
  what it received, so the bound it gives says nothing: when background re-hashes
  onto one spine at 150% of its capacity, what that spine forwards is less than
  what reached it, and the difference is no dead cable.) The gap between the two shares must exceed
  what a queue can hold at the end of the interval (a burst that fills the queue and
  drops the probe has not crossed the cable yet): 20% of two 100 ms intervals at
  20 Mb/s is 100 kB, the lab's queue holds 90 kB;
- **delivering**: the same bound shows at least ``BUSY_SHARE`` of the capacity
  arriving: the link works and its queue is full; *never down* on probes alone (a
  ``probes_lost`` warning fires once the silence passes the hold time);
- **busy**: the near end sent at least ``BUSY_SHARE`` of the capacity and nothing
  shows it froze (the far end is a leaf, whose hosts' traffic no counter bounds, or
  its bound is void or in between): the cable carries traffic as far as the counters
  can tell, and a full tail-drop queue explains the lost probes. *Never down* on
  probes alone either, with the same warning. A cable whose counters show traffic is
  not taken down whatever happens to its probes: a false "down" rewrites the ECMP
  groups, moves the background and refuses forced transfers, and a truly dead cable
  is seen by its other direction (frozen or idle) or stops carrying traffic;
- **unknown** (a switch's counters are missing, or the near end sent between the
  idle and busy shares): *down once the silence lasts the hold time*.

So a cable that dies leaves path selection after two rounds (two to three polling
periods) when idle, and within three rounds when loaded towards a spine (the
counters need two poll intervals that start after the death). A cable that dies
only in the spine-to-leaf direction while the spine keeps sending into it stays up
until that direction goes quiet (then it is idle, or unknown for the hold time):
the price of never taking a loaded, working cable down, which a per-port receive
counter would remove.

A per-port receive counter at the far end would make the evidence direct for every
direction (docs/controller-requests.md).

Direct evidence there is when a port reports its link down (its gNMI oper-status,
:mod:`~controller.engine.ports`): the cable is down at once, whatever its probes and
counters say, and stays down in every round's verdict while the report lasts; when it
is up again, the directions' statuses here decide.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from controller.engine.audit import LinkVerdict
from controller.engine.loads import LoadTable
from controller.topology import LinkStatus, PortRef, Topology

IDLE_SHARE = 0.10
"""A port that sent less than this share of its capacity cannot have dropped a probe."""
BUSY_SHARE = 0.25
"""Counter evidence threshold: this share of the capacity sent, or arrived, in the interval."""
FROZEN_SHARE = 0.05
"""Less than this share of the capacity arriving, from a busy sender, is a dead link."""
SATURATED_SHARE = 0.90
"""A far-end port that sent this share of its capacity may be dropping: no frozen verdict."""
SPAN_POLLS = 2
"""The counter evidence covers this many poll intervals."""


class Evidence(StrEnum):
    """What the counters of the latest poll interval say about one direction."""

    IDLE = "idle"
    FROZEN = "frozen"
    DELIVERING = "delivering"
    BUSY = "busy"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class CounterReading:
    """The evidence, the bytes behind it, and the interval it covers."""

    evidence: Evidence
    sent: float = 0.0
    arrived: float | None = None
    span_s: float = 0.0

    def describe(self) -> str:
        """The figures in words, for verdict details and alerts."""
        if self.evidence is Evidence.UNKNOWN:
            return "no counter evidence"
        ms = self.span_s * 1e3
        text = f"sent {self.sent / 1e3:.0f} kB in {ms:.0f} ms"
        if self.arrived is not None:
            text += f", at least {max(0.0, self.arrived) / 1e3:.0f} kB arrived"
        return text


def counter_evidence(
    table: LoadTable,
    topology: Topology,
    origin: PortRef,
    span_s: float,
    *,
    now: float,
    max_age_s: float,
) -> CounterReading:
    """The counter evidence for the direction leaving ``origin`` (see the module docstring).

    The interval is the last ``span_s`` seconds that every counter involved covers
    (at least half of it when the history is shorter); if that ends more than
    ``max_age_s`` before ``now`` the evidence is unknown.
    """
    port = topology.egress.get(origin)
    near = table.index.get(origin)
    if port is None or port.peer_port is None or near is None:
        return CounterReading(Evidence.UNKNOWN)
    far = port.peer_port.switch
    far_ports = table.by_switch.get(far, [])
    inputs: list[int] = []
    bounded = bool(far_ports)
    for i in far_ports:
        peer = table.ports[i].peer_port
        j = table.index.get(peer) if peer is not None else None
        if j is None:  # a host port: its host's traffic is bounded by no counter
            bounded = False
        elif peer != origin:
            inputs.append(j)
    involved = [near, *far_ports, *inputs] if bounded else [near]
    hist = [table.hist_t[i] for i in involved]
    if not all(hist):
        return CounterReading(Evidence.UNKNOWN)
    t1 = min(h[-1] for h in hist)
    t0 = max(t1 - span_s, *(h[0] for h in hist))
    if now - t1 > max_age_s or t1 - t0 < span_s / 2:
        return CounterReading(Evidence.UNKNOWN)
    span_s = t1 - t0
    sent = _delta(table, near, t0, t1)
    if sent is None:
        return CounterReading(Evidence.UNKNOWN)
    cap_bytes = table.capacity[near] / 8 * span_s
    if sent < IDLE_SHARE * cap_bytes:
        return CounterReading(Evidence.IDLE, sent, None, span_s)
    otherwise = Evidence.BUSY if sent >= BUSY_SHARE * cap_bytes else Evidence.UNKNOWN
    if not bounded:
        return CounterReading(otherwise, sent, None, span_s)
    out = [_delta(table, i, t0, t1) for i in far_ports]
    into = [_delta(table, j, t0, t1) for j in inputs]
    if any(x is None for x in out) or any(x is None for x in into):
        return CounterReading(otherwise, sent, None, span_s)
    arrived = sum(x for x in out if x is not None) - sum(x for x in into if x is not None)
    if arrived >= BUSY_SHARE * cap_bytes:
        return CounterReading(Evidence.DELIVERING, sent, arrived, span_s)
    saturated = any(
        (x or 0.0) >= SATURATED_SHARE * table.capacity[i] / 8 * span_s
        for i, x in zip(far_ports, out, strict=True)
    )
    if otherwise is Evidence.BUSY and arrived < FROZEN_SHARE * cap_bytes and not saturated:
        return CounterReading(Evidence.FROZEN, sent, arrived, span_s)
    return CounterReading(otherwise, sent, arrived, span_s)


def _delta(table: LoadTable, i: int, t0: float, t1: float) -> float | None:
    a, b = table.sent_at(i, t0), table.sent_at(i, t1)
    return None if a is None or b is None else b - a


@dataclass(slots=True)
class _Direction:
    status: LinkStatus = LinkStatus.UP
    missed: int = 0
    silent_since: float | None = None


@dataclass(frozen=True, slots=True)
class Judgement:
    """A direction's status after a round, and whether probes are lost on a live link."""

    status: LinkStatus
    detail: str
    probes_lost: str | None = None


class Liveness:
    """Per direction: the status, the missed rounds, and since when it is silent."""

    def __init__(self, misses: int, hold_s: float) -> None:
        self.misses = max(1, misses)
        self.hold_s = hold_s
        self._state: dict[PortRef, _Direction] = {}

    def status(self, origin: PortRef) -> LinkStatus:
        """The direction's status as last judged (up until judged otherwise)."""
        state = self._state.get(origin)
        return state.status if state is not None else LinkStatus.UP

    def judge(
        self,
        origin: PortRef,
        probed: LinkVerdict,
        now: float,
        counters: CounterReading | None,
    ) -> Judgement:
        """The direction's status after a round whose raw outcome is ``probed``.

        ``counters`` is the evidence for a direction whose probe was not seen (the
        caller computes it only then); see the module docstring for the rules.
        """
        state = self._state.setdefault(origin, _Direction())
        if probed.status is not LinkStatus.DOWN:
            state.missed, state.silent_since = 0, None
            state.status = probed.status
            return Judgement(probed.status, probed.detail)
        state.missed += 1
        if state.silent_since is None:
            state.silent_since = now
        silent = now - state.silent_since
        if state.missed < self.misses:
            return Judgement(state.status, "")
        ev = counters.evidence if counters is not None else Evidence.UNKNOWN
        figures = counters.describe() if counters is not None else "no counter evidence"
        rounds = f"{state.missed} round{'s' if state.missed > 1 else ''}"
        base = f"{probed.detail} ({rounds}, {silent:.1f} s)"
        if ev is Evidence.IDLE:
            state.status = LinkStatus.DOWN
            return Judgement(state.status, f"{base}; the port is idle ({figures})")
        if ev is Evidence.FROZEN:
            state.status = LinkStatus.DOWN
            return Judgement(state.status, f"{base}; counters frozen ({figures})")
        if ev is Evidence.DELIVERING or ev is Evidence.BUSY:
            lost = None
            if silent >= self.hold_s:
                what = "delivers" if ev is Evidence.DELIVERING else "carries"
                lost = f"{base}, but the link {what} traffic ({figures}): a full queue"
            return Judgement(state.status, "", lost)
        if silent >= self.hold_s:
            state.status = LinkStatus.DOWN
            return Judgement(state.status, f"{base}: silent for the hold time ({self.hold_s:g} s)")
        return Judgement(state.status, "")
