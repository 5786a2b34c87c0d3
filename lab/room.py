"""Room on the spines: the measured spare capacity of each path between two leaves.

A KV transfer from leaf ``A`` to leaf ``B`` over spine ``S`` crosses two cables: ``A``'s
uplink towards ``S`` (the leaf's interface transmits) and ``S``'s downlink towards ``B``
(the spine's interface transmits). A path's load is the busier of the two.

Two uses, both on *measured* counters, never on the planned background (a failure
that re-hashes ECMP moves the background away from the plan):

- :func:`roomiest_spine`: the ``isolated`` reference puts each transfer on the spine
  with the most spare capacity in a short measurement just before it starts;
- :func:`spines_with_room`: after a run, which spines had room while a transfer that
  timed out was stuck (the monitor's per-interface samples), for the goals
  (:mod:`experiment.goals`).

A cable that was down (at any time of the window) is never room: an interface that is
down transmits nothing and would look idle.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

Cable = tuple[str, str]
"""``(leaf, spine)``."""


@dataclass(frozen=True, slots=True)
class CableIntfs:
    """The interfaces of one cable: the leaf's (towards the spine) and the spine's."""

    leaf_intf: str
    spine_intf: str
    bps: int


def path_load(
    rates: Mapping[str, float], cables: Mapping[Cable, CableIntfs], src: str, dst: str, spine: str
) -> float | None:
    """The busier cable's share of capacity on ``src -> spine -> dst`` (None: no such path)."""
    up, down = cables.get((src, spine)), cables.get((dst, spine))
    if up is None or down is None:
        return None
    return max(
        rates.get(up.leaf_intf, 0.0) / up.bps,
        rates.get(down.spine_intf, 0.0) / down.bps,
    )


def _spines(cables: Mapping[Cable, CableIntfs]) -> list[str]:
    return sorted({spine for _, spine in cables})


def roomiest_spine(
    rates: Mapping[str, float],
    cables: Mapping[Cable, CableIntfs],
    src: str,
    dst: str,
    down: Collection[Cable] = (),
) -> str | None:
    """The spine whose path ``src -> dst`` has the most spare bit/s in ``rates`` (per interface).

    Ties go to the first spine by name; cables in ``down`` rule their spine out.
    """
    best: tuple[float, str] | None = None
    for spine in _spines(cables):
        if (src, spine) in down or (dst, spine) in down:
            continue
        up, dn = cables.get((src, spine)), cables.get((dst, spine))
        if up is None or dn is None:
            continue
        spare = min(up.bps - rates.get(up.leaf_intf, 0.0), dn.bps - rates.get(dn.spine_intf, 0.0))
        if best is None or spare > best[0]:
            best = (spare, spine)
    return best[1] if best else None


def spines_with_room(
    samples: Sequence[tuple[float, Mapping[str, float]]],
    interval_s: float,
    cables: Mapping[Cable, CableIntfs],
    src: str,
    dst: str,
    *,
    window: tuple[float, float],
    down: Collection[Cable] = (),
    threshold: float = 0.5,
) -> tuple[str, ...] | None:
    """Spines whose path ``src -> dst`` ran below ``threshold`` on average during ``window``.

    ``samples`` are ``(end time, bit/s per interface)`` over ``interval_s`` each; those
    overlapping ``window`` count. None when no sample overlaps (nothing was measured).
    """
    start, end = window
    inside = [rates for t, rates in samples if t > start and t - interval_s < end]
    if not inside:
        return None
    out = []
    for spine in _spines(cables):
        if (src, spine) in down or (dst, spine) in down:
            continue
        loads = [path_load(rates, cables, src, dst, spine) for rates in inside]
        known = [x for x in loads if x is not None]
        if known and sum(known) / len(known) < threshold:
            out.append(spine)
    return tuple(out)


def down_during(
    log: Sequence[tuple[float, Cable, bool]], window: tuple[float, float]
) -> set[Cable]:
    """The cables down at some moment of ``window``, from a log of ``(time, cable, up)``."""
    start, end = window
    at_start: dict[Cable, bool] = {}
    out: set[Cable] = set()
    for t, cable, up in sorted(log):
        if t < start:
            at_start[cable] = up
        elif t <= end and not up:
            out.add(cable)
    return out | {c for c, up in at_start.items() if not up}
