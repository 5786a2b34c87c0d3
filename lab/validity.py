"""Whether a run measured the fabric, or the lab's own limits.

The switches are Python processes. If one saturates its core, or the machine runs
out of CPU, queues build inside the switch (its socket buffer), not on the shaped
links, and completion times measure Python. A run is **invalid** when:

- a switch process used more than ``switch_cpu_max`` of a core over a sampling
  interval (default 85%);
- the machine's CPUs were busier than ``machine_cpu_max`` (default 95%) for more than
  ``machine_busy_share`` of the run (default 20%): then no switch can be trusted to
  keep up, even below one core (other users of the machine count too);
- a switch lost packets that no shaped queue accounts for
  (:func:`lab.monitor.unexplained_drops`) beyond ``drops_max`` packets or
  ``drops_fraction`` of what it received, whichever is larger;
- a background flow stopped early, or a KV transfer failed other than by its timeout
  (the results count failed transfers themselves; a timeout is a censored result of
  the mode, :mod:`experiment.censored`, not a fault of the lab).

:func:`judge` returns the reasons, in words; an empty list is a valid run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lab.monitor import Observed, unexplained_drops


@dataclass(frozen=True, slots=True)
class Limits:
    """Where a run stops being a measurement of the fabric."""

    switch_cpu_max: float = 0.85
    machine_cpu_max: float = 0.95
    machine_busy_share: float = 0.20
    drops_max: int = 20
    drops_fraction: float = 0.005


def judge(observed: Observed, limits: Limits = Limits(), extra: Sequence[str] = ()) -> list[str]:
    """The reasons a run is invalid (empty when it is valid)."""
    reasons: list[str] = []
    for switch, shares in sorted(observed.switch_cpu.items()):
        peak = max(shares, default=0.0)
        if peak > limits.switch_cpu_max:
            busy = sum(1 for s in shares if s > limits.switch_cpu_max) * observed.interval_s
            reasons.append(
                f"switch {switch} saturated: {peak:.0%} of a core at peak, above "
                f"{limits.switch_cpu_max:.0%} for {busy:g}s "
                "(the lab measured Python, not the fabric)"
            )
    if observed.machine_cpu:
        busy = sum(1 for x in observed.machine_cpu if x > limits.machine_cpu_max)
        share = busy / len(observed.machine_cpu)
        if share > limits.machine_busy_share:
            reasons.append(
                f"the machine's CPUs were above {limits.machine_cpu_max:.0%} busy for "
                f"{share:.0%} of the run: switches may have fallen behind"
            )
    for switch, delta in sorted(observed.counters.items()):
        lost = unexplained_drops(delta)
        allowed = max(limits.drops_max, limits.drops_fraction * delta.rx)
        if lost > allowed:
            reasons.append(
                f"switch {switch} lost {lost} of {delta.rx} packets that no link queue "
                f"explains ({delta.queue_drops} dropped by shaped queues)"
            )
    reasons.extend(extra)
    return reasons


def health(observed: Observed, limits: Limits = Limits()) -> dict[str, object]:
    """The figures behind the verdict, JSON-ready: how close the lab came to its limits."""
    return {
        "switch_cpu_peak": {
            sw: round(max(v, default=0.0), 3) for sw, v in sorted(observed.switch_cpu.items())
        },
        "switch_cpu_mean": {
            sw: round(sum(v) / len(v), 3) for sw, v in sorted(observed.switch_cpu.items()) if v
        },
        "machine_cpu_peak": round(max(observed.machine_cpu, default=0.0), 3),
        "machine_busy_share": (
            round(
                sum(1 for x in observed.machine_cpu if x > limits.machine_cpu_max)
                / len(observed.machine_cpu),
                3,
            )
            if observed.machine_cpu
            else None
        ),
        "unexplained_drops": {
            sw: unexplained_drops(d) for sw, d in sorted(observed.counters.items())
        },
        "queue_drops": {sw: d.queue_drops for sw, d in sorted(observed.counters.items())},
        "packets_received": {sw: d.rx for sw, d in sorted(observed.counters.items())},
    }
