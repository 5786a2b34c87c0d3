"""Figures of an experiment: the CDF of KV flow completion times, and the sweep.

matplotlib runs on its Agg backend (no display); each function writes one PNG.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def plot_cdf(results: Mapping[str, object], path: Path) -> Path:
    """One CDF line per mode of ``results['modes'][mode]['fct_samples_ms']``.

    Timed-out transfers (``fct_censored_ms``) are drawn at the time they ran, a lower
    bound, and the legend says how many there are.
    """
    modes = results["modes"]
    assert isinstance(modes, Mapping)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for mode, doc in modes.items():
        censored = doc.get("fct_censored_ms") or []
        samples = sorted([*(doc.get("fct_samples_ms") or []), *censored])
        if not samples:
            continue
        ys = [(i + 1) / len(samples) for i in range(len(samples))]
        label = mode if doc.get("valid") else f"{mode} (invalid)"
        if censored:
            label += f" ({len(censored)} timed out, at >= their timeout)"
        ax.step(samples, ys, where="post", label=label, linestyle="-" if doc.get("valid") else ":")
    ax.set_xlabel("KV flow completion time (ms, lab)")
    ax.set_ylabel("fraction of transfers")
    ax.set_ylim(0, 1.01)
    ax.grid(True, alpha=0.3)
    verdict = "" if results.get("valid") else " (INVALID run)"
    ax.set_title(f"{results['scenario']}: KV transfer completion times{verdict}")
    if ax.get_legend_handles_labels()[0]:  # none before a mode's first transfer (Ctrl-C)
        ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_sweep(
    points: Sequence[Mapping[str, object]],
    path: Path,
    *,
    x_key: str,
    line_key: str,
    stat: str = "p99",
    mode: str = "kv-aware",
    band: tuple[float, float] = (0.40, 0.60),
) -> Path:
    """Reduction vs ECMP of ``mode`` at ``stat`` against ``x_key``, one line per ``line_key``.

    Each point is ``{x_key: .., line_key: .., "reduction": {stat: ..} | None, "valid": ..}``
    and optionally ``"n"``, the samples behind it, written next to the marker (a p99 of
    a few samples is their largest one: one TCP timeout moves it). The design's claimed
    band (40-60% by default) is shaded; invalid points are hollow.
    """
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.axhspan(band[0] * 100, band[1] * 100, color="tab:green", alpha=0.12, label="claimed 40-60%")
    lines: dict[object, list[tuple[float, float, bool, object]]] = {}
    for p in points:
        red = p.get("reduction")
        if not isinstance(red, Mapping) or stat not in red:
            continue
        x = p[x_key]
        assert isinstance(x, int | float)
        entry = (float(x), red[stat] * 100, bool(p.get("valid")), p.get("n"))
        lines.setdefault(p[line_key], []).append(entry)
    for key, pts in sorted(lines.items(), key=lambda kv: str(kv[0])):
        pts.sort(key=lambda e: e[0])
        handle = ax.plot(
            [e[0] for e in pts], [e[1] for e in pts], marker="o", label=f"{line_key}={key}"
        )
        colour = handle[0].get_color()
        for x, y, valid, n in pts:
            if not valid:
                ax.plot([x], [y], marker="o", markerfacecolor="white", markeredgecolor=colour)
            if isinstance(n, int):
                ax.annotate(
                    f"n={n}", (x, y), textcoords="offset points", xytext=(4, 4),
                    fontsize=7, color=colour,
                )  # fmt: skip
    ax.axhline(0, color="black", linewidth=0.8)
    xs = [e[0] for pts in lines.values() for e in pts]
    if xs and min(xs) > 0 and max(xs) >= 100 * min(xs):  # decades apart (polls of 10ms-1s)
        ax.set_xscale("log")
    ax.set_xlabel(x_key.replace("_", " "))
    ax.set_ylabel(f"{mode} {stat} reduction vs ECMP (%)")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best")
    ax.set_title(f"Where the claim holds: {mode} vs ECMP at {stat}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
