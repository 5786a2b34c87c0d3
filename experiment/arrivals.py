"""KV-transfer arrivals, generated from a seed so that every mode sees the same traffic.

A :class:`Schedule` is a pure function of the scenario's phases, the host roles, the
transfer size and the seed: the same inputs give the same transfers (source,
destination, size, start offsets and the source port each transfer uses when it is
left to ECMP), whatever the mode. Modes therefore differ only in where the fabric
puts the transfers.

Phases run one after the other. Offsets are relative to the start of their phase:

- *sequential*: one transfer at a time; ``at_s`` is the gap after the previous
  transfer completed (the only kind whose timing follows the fabric);
- *burst*: ``bursts`` groups of ``size`` transfers, group ``k`` starting at
  ``k x every``, each transfer uniformly within the group's ``window``. A group uses
  distinct senders and distinct receivers while there are enough, so that transfers
  collide in the fabric and not on a host's own link;
- *poisson*: exponential gaps of mean ``mean_gap`` (a Poisson process).

**Staggering.** A burst phase's ``stagger`` spreads the starts of each group over that
window, as a sender-side alternative to the controller holding transfers: the
group's ``i``-th arrival (in time order) starts no earlier than ``i x stagger /
(size - 1)`` after the group's start. The arrival keeps its time (the prefill ended
then, the decode GPU waits from then) and records how long its sender holds it back
(``hold_s``): a completion time runs from the arrival, hold included.

**Deadlines.** Given a ``(min, max)`` range, every transfer gets a deadline drawn
uniformly from it (``deadline_s``, after its arrival), from a generator of its own so
that the rest of the schedule is the same with or without deadlines.

Every transfer crosses the fabric: its receiver sits on another leaf than its sender.
ECMP source ports are drawn without replacement from nearly the whole port space (with
replacement beyond its 55,000 ports, which only the simulator reaches): the
data plane's CRC-16 hash is linear, and a narrow range of ports reaches only some of
the uplinks, which would make the ECMP baseline worse (or better) than hashing is.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from experiment.flows import ECMP_PORTS
from experiment.roles import Roles
from experiment.scenario import Phase, PhaseKind

LARGE_POOL = 256
"""Beyond this many receivers (the simulator's clusters), a group draws a sample of them
instead of shuffling them all, which would cost a shuffle of the pool per transfer."""


@dataclass(frozen=True, slots=True)
class Arrival:
    """One KV transfer: ``at_s`` into its phase (sequential: after the previous one)."""

    index: int
    phase: int
    at_s: float
    src: str
    dst: str
    nbytes: int
    ecmp_port: int
    hold_s: float = 0.0  # the sender starts this long after the arrival (staggering)
    deadline_s: float | None = None  # after the arrival, when the transfer must be done


@dataclass(frozen=True, slots=True)
class PhasePlan:
    """A phase and the transfers it starts."""

    phase: Phase
    arrivals: tuple[Arrival, ...]

    @property
    def sequential(self) -> bool:
        """True when each transfer waits for the previous one to complete."""
        return self.phase.kind is PhaseKind.SEQUENTIAL


@dataclass(frozen=True, slots=True)
class Schedule:
    """Every transfer of one run, phase by phase."""

    seed: int
    phases: tuple[PhasePlan, ...]

    @property
    def arrivals(self) -> tuple[Arrival, ...]:
        """All transfers in index order."""
        return tuple(a for p in self.phases for a in p.arrivals)


def generate(
    phases: Sequence[Phase],
    roles: Roles,
    nbytes: int,
    seed: int,
    deadline: tuple[float, float] | None = None,
) -> Schedule:
    """The transfers of ``phases`` from ``roles.senders`` to receivers on other leaves;
    each with a deadline drawn from ``deadline`` (min, max seconds) when given."""
    senders, receivers, leaf_of = roles.senders, roles.receivers, roles.leaf_of
    if not senders or not receivers:
        raise ValueError("a schedule needs at least one sender and one receiver")
    if not any(leaf_of[s] != leaf_of[r] for s in senders for r in receivers):
        raise ValueError("no sender and receiver sit on different leaves")
    rng = random.Random(f"kvfabric-arrivals:{seed}")
    total = sum(p.transfers for p in phases)
    if total <= len(ECMP_PORTS):
        ports = iter(rng.sample(ECMP_PORTS, total))
    else:  # more transfers than ports (the simulator's largest runs): ports repeat
        ports = iter(rng.choices(ECMP_PORTS, k=total))
    deadlines = random.Random(f"kvfabric-deadlines:{seed}")
    index = 0
    plans: list[PhasePlan] = []
    for number, phase in enumerate(phases):
        offsets = _offsets(phase, rng)
        pairs = _pairs(phase, len(offsets), roles, rng)
        holds = staggered(phase, offsets)
        arrivals = []
        for at, hold, (src, dst) in zip(offsets, holds, pairs, strict=True):
            due = deadlines.uniform(*deadline) if deadline is not None else None
            arrivals.append(Arrival(index, number, at, src, dst, nbytes, next(ports), hold, due))
            index += 1
        plans.append(PhasePlan(phase, tuple(arrivals)))
    return Schedule(seed, tuple(plans))


def _offsets(phase: Phase, rng: random.Random) -> list[float]:
    if phase.kind is PhaseKind.SEQUENTIAL:
        return [0.0] + [phase.gap_s] * (phase.count - 1)
    if phase.kind is PhaseKind.POISSON:
        t, out = 0.0, []
        for _ in range(phase.count):
            out.append(t)
            t += rng.expovariate(1.0 / phase.mean_gap_s)
        return out
    out = []
    for k in range(phase.bursts):
        start = k * phase.every_s
        out.extend(sorted(start + rng.uniform(0.0, phase.window_s) for _ in range(phase.size)))
    return out


def staggered(phase: Phase, offsets: Sequence[float]) -> list[float]:
    """How long each of a phase's arrivals is held back so that every burst's starts
    spread over its ``stagger`` window (zeros without one; see the module docstring)."""
    if phase.kind is not PhaseKind.BURST or phase.stagger_s <= 0.0 or phase.size < 1:
        return [0.0] * len(offsets)
    step = phase.stagger_s / (phase.size - 1) if phase.size > 1 else 0.0
    holds = []
    for k, at in enumerate(offsets):
        group, i = divmod(k, phase.size)
        start = group * phase.every_s + i * step
        holds.append(max(0.0, start - at))
    return holds


def _pairs(phase: Phase, count: int, roles: Roles, rng: random.Random) -> list[tuple[str, str]]:
    group = phase.size if phase.kind is PhaseKind.BURST else 1
    receiver_leaves = set(roles.leaf_of[r] for r in roles.receivers)
    remote = [
        s for s in roles.senders if receiver_leaves - {roles.leaf_of[s]}
    ]  # senders with a receiver on another leaf
    out: list[tuple[str, str]] = []
    while len(out) < count:
        n = min(group, count - len(out))
        out.extend(_group(n, remote, roles.receivers, roles.leaf_of, rng))
    return out


def _group(
    n: int,
    remote: Sequence[str],
    receivers: Sequence[str],
    leaf_of: Mapping[str, str],
    rng: random.Random,
) -> list[tuple[str, str]]:
    """``n`` cross-leaf pairs from the ``remote`` senders (those with a receiver on
    another leaf), with distinct senders and receivers while there are enough."""
    if len(receivers) <= LARGE_POOL:
        free = list(receivers)
        rng.shuffle(free)
    else:  # the order of a few random receivers is all a group uses
        free = rng.sample(list(receivers), min(len(receivers), 2 * n + 16))
    pairs = []
    for src in _draw(n, remote, rng):
        here = leaf_of[src]
        dst = next((r for r in free if leaf_of[r] != here), None)
        if dst is not None:
            free.remove(dst)
        else:  # every distinct receiver is taken: allow a repeat
            dst = rng.choice([r for r in receivers if leaf_of[r] != leaf_of[src]])
        pairs.append((src, dst))
    return pairs


def _draw(n: int, pool: Sequence[str], rng: random.Random) -> list[str]:
    """``n`` names of ``pool``: distinct while ``n`` allows, then with repeats."""
    out: list[str] = []
    while len(out) < n:
        out.extend(rng.sample(list(pool), min(len(pool), n - len(out))))
    return out
