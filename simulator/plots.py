"""The simulator's own figure: each tier's mean utilisation over time, one panel per mode.

matplotlib runs on its Agg backend (no display); the function writes one PNG.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from simulator.modes import TierSeries

TIER_LABELS = {
    "intra-rack": "host links",
    "inter-rack": "leaf uplinks",
    "spine": "spine downlinks",
    "spine-uplink": "spine uplinks",
    "superspine": "superspine downlinks",
}


def plot_utilisation(series: Mapping[str, TierSeries], path: Path, *, title: str) -> Path:
    """Mean utilisation of every tier against time since the first transfer, per mode.

    Each mode has its own time axis: isolated runs its transfers one at a time and lasts
    far longer than the others.
    """
    modes = [m for m, s in series.items() if any(s.values())]
    fig, axes = plt.subplots(
        len(modes) or 1, 1, figsize=(8, 1.9 * max(1, len(modes)) + 0.8), squeeze=False,
    )  # fmt: skip
    for ax, mode in zip(axes[:, 0], modes, strict=False):
        for tier, points in series[mode].items():
            if not points:
                continue
            ax.plot(
                [t for t, _ in points],
                [u * 100 for _, u in points],
                label=TIER_LABELS.get(tier, tier),
                linewidth=0.9,
            )
        ax.set_ylabel(f"{mode}\nmean util %")
        ax.set_xlabel("time since the first transfer (s, simulated)", fontsize=8)
        ax.set_ylim(0, 100)
        ax.grid(True, alpha=0.3)
    axes[0, 0].legend(loc="upper right", fontsize=8)
    fig.suptitle(f"{title}: utilisation per tier over time")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
