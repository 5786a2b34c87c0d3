"""How a long-running controller process sets Python's cyclic garbage collector.

Once the fabric is loaded, :func:`settle` moves everything alive into the permanent
generation (``gc.freeze``), so that full passes stop re-walking the P4Info, the
topology and the libraries, and raises the collector's thresholds. CPython's default
starts a young-generation pass every 700 net allocations and an older one every 10 of
those; a decision allocates a few hundred objects, so with the defaults every second
or third decision paid for a pass, and one in a few hundred for a pass of the middle
generation over the thousand transfers in flight: that, not the decision itself, was
most of the p99 of ``kvfabric bench scheduler`` (462 against 258 us with the collector
off). The engine makes almost no reference cycles (its records are frozen dataclasses
and tuples), so collecting them less often costs little memory; reference counting
still frees everything else at once.
"""

from __future__ import annotations

import gc

YOUNG = 50_000
"""Net allocations between two passes of the young generation (CPython: 700)."""
MIDDLE = 50
"""Young passes per pass of the middle generation (CPython: 10)."""
OLD = 100
"""Middle passes per full pass (CPython: 10)."""


def settle() -> None:
    """Freeze what is alive now and raise the thresholds (see the module docstring)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG, MIDDLE, OLD)
