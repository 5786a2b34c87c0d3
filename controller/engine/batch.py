"""A batch of requests decided as one: the order its members are placed in.

The design's hardest moment is a burst: hundreds of prefills finishing within
milliseconds, each KV cache needing a path. Decided one request at a time in arrival
order, each answer knows only the requests before it, and nothing is held when the
scheduler's ``max_wait`` is shorter than one transfer. :meth:`Engine.decide_batch
<controller.engine.core.Engine.decide_batch>` takes the burst at once:

- it places the members in the policy's order (below), each through the engine's
  own path selection, so each sees the bytes (and the slices) of those placed before
  it: the shortest transfers take the emptiest paths first, and the rest fill what
  is left (a greedy water-filling over the candidate paths, by expected completion);
- with a scheduling policy, a member whose paths already carry the batch's earlier
  members is held behind them when that ends it no later (the scheduler's own rule,
  :mod:`schedule`), for at most ``scheduling.batch_max_wait`` rather than
  ``max_wait``: the burst's transfers that share a cable then go one after another
  and the first ones finish at full rate, while a request outside a batch is still
  held at most ``max_wait``. The held queue releases them as it releases any.

It is never worse, by the engine's own picture, than the same requests decided one at
a time in their order: the engine tries that too, from the same state, and keeps the
better by :func:`batch_measure`, the policy's own measure of a plan (the total of the
members' expected completions under ``srpt`` and without a policy; under ``edf`` the
latest finish past a deadline; under ``fifo``, first come first served, the last
finish).

The order: ``edf`` by deadline (a member without one last, by its SRPT key); every
other policy by SRPT, the member's time alone (its bytes over its NIC), shortest
first; ties keep the requests' order. FIFO places in the requests' order: a batch has
no arrival order of its own but that one.

Pure, like the rest of the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from controller.config import Policy
from controller.engine.events import Demand


def batch_order(
    members: Sequence[tuple[int, Demand]],
    policy: Policy,
    nic_bps: Callable[[Demand], float],
    *,
    now: float,
    max_wait_s: float,
) -> list[int]:
    """The indexes of ``members`` (``(index, request)`` pairs) in the order to place
    them (see the module docstring)."""
    if policy is Policy.FIFO:
        return [i for i, _ in members]

    def alone(r: Demand) -> float:
        return 8.0 * r.bytes / nic_bps(r)

    if policy is Policy.EDF:

        def key(m: tuple[int, Demand]) -> tuple[float, float, int]:
            i, r = m
            due = now + r.deadline_s if r.deadline_s is not None else now + max_wait_s + alone(r)
            return (due, alone(r), i)
    else:

        def key(m: tuple[int, Demand]) -> tuple[float, float, int]:
            i, r = m
            return (alone(r), 0.0, i)

    return [i for i, _ in sorted(members, key=key)]


def batch_measure(policy: Policy, ends: Sequence[tuple[float, Demand]], now: float) -> float:
    """The policy's measure of a plan, from each member's expected end (smaller is
    better; see the module docstring)."""
    if not ends:
        return 0.0
    if policy is Policy.EDF:
        late = [end - (now + r.deadline_s) for end, r in ends if r.deadline_s is not None]
        return max([0.0, *late])
    if policy is Policy.FIFO:
        return max(end for end, _ in ends) - now
    return sum(end - now for end, _ in ends)
