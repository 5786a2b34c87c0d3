"""Random flow problems for the rate allocators' property tests: links with capacities
and flows over one to three of them (``maxmin`` and ``srpt`` draw the same shapes)."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from hypothesis import strategies as st

INF = math.inf


def links_and_paths(
    draw: st.DrawFn,
) -> tuple[int, npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """The number of flows, each flow's links (padded with the uncapped link ``nlinks``
    to three) and every link's capacity (the padding link's infinite)."""
    nlinks = draw(st.integers(1, 6))
    caps = draw(st.lists(st.floats(0.0, 100.0), min_size=nlinks, max_size=nlinks))
    nflows = draw(st.integers(1, 8))
    paths = []
    for _ in range(nflows):
        links = draw(st.lists(st.integers(0, nlinks - 1), min_size=1, max_size=3, unique=True))
        paths.append(links + [nlinks] * (3 - len(links)))  # pad link
    return nflows, np.array(paths, dtype=np.int64), np.array([*caps, INF])
