"""Figures of an experiment: the CDF of KV flow completion times, and the sweep.

matplotlib runs on its Agg backend (no display); each function writes one PNG.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

REFERENCE_STYLE = {
    "spray": {"color": "black", "linestyle": "--", "linewidth": 1.6},
    "bound": {"color": "dimgrey", "linestyle": "-.", "linewidth": 1.6},
}
"""The simulator's physical references: black and grey, dashed, no markers."""
FLOOR_STYLE = {"color": "darkgrey", "linestyle": ":", "linewidth": 1.4}
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def plot_cdf(results: Mapping[str, object], path: Path) -> Path:
    """One CDF line per mode of ``results['modes'][mode]['fct_samples_ms']``.

    Timed-out transfers (``fct_censored_ms``) are drawn at the time they ran, a lower
    bound, and the legend says how many there are. Modes are solid lines (dotted when
    invalid) that differ by colour and marker (a marker every tenth of the transfers),
    so that lines which overlap stay apart; the references (``spray``, ``bound``) are
    black and grey dashes, and the bound's per-transfer floor (``results['floor']``) a
    dotted grey line.
    """
    modes = results["modes"]
    assert isinstance(modes, Mapping)
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    k = 0
    for mode, doc in modes.items():
        censored = doc.get("fct_censored_ms") or []
        samples = sorted([*(doc.get("fct_samples_ms") or []), *censored])
        if not samples:
            continue
        label = mode if doc.get("valid") else f"{mode} (invalid)"
        if censored:
            label += f" ({len(censored)} timed out, at >= their timeout)"
        style = REFERENCE_STYLE.get(mode)
        if style is None:
            style = {
                "color": f"C{k % 10}",
                "linestyle": "-" if doc.get("valid") else ":",
                "marker": MARKERS[k % len(MARKERS)],
                "markevery": max(1, len(samples) // 10),
                "markersize": 4,
            }
            k += 1
        else:
            label += " (reference)"
        _step(ax, samples, label, style)
    floor = results.get("floor")
    if isinstance(floor, Mapping) and floor.get("samples_ms"):
        _step(ax, list(floor["samples_ms"]), "bound: per-transfer floor", FLOOR_STYLE)
    ax.set_xlabel("KV flow completion time (ms, lab)")
    ax.set_ylabel("fraction of transfers")
    ax.set_ylim(0, 1.01)
    ax.grid(True, alpha=0.3)
    verdict = "" if results.get("valid") else " (INVALID run)"
    ax.set_title(f"{results['scenario']}: KV transfer completion times{verdict}")
    if ax.get_legend_handles_labels()[0]:  # none before a mode's first transfer (Ctrl-C)
        ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _step(ax: Any, samples: Sequence[float], label: str, style: Mapping[str, Any]) -> None:
    """A CDF of sorted ``samples`` as a step line."""
    ys = [(i + 1) / len(samples) for i in range(len(samples))]
    ax.step(samples, ys, where="post", label=label, **style)


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
