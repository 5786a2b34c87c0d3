"""A sweep: one scenario run over a grid of values, and where the claim holds.

A sweep file names a base scenario and the axes to vary; each axis sets one key of
the scenario (a key path into its YAML, such as ``background[0].load`` or
``arrivals[0].size``) to each of its values::

    name: sweep
    scenario: collisions.yaml          # relative to the sweep file
    axes:
      - {name: background_load, key: background[0].load, values: [0%, 25%, 50%, 75%]}
      - {name: burst_size, key: arrivals[0].size, values: [1, 2, 4]}
    modes: [ecmp, kv-aware]
    stat: p99                          # the statistic plotted

Every point of the grid is the base scenario with those keys replaced, validated
like any scenario file (so a bad value is an error naming the sweep file and the
axis). A sweep is read for one tool: ``kvfabric simulate --sweep`` loads it with
``Tool.SIMULATE``, so its base scenario and points may use the simulator's keys and
modes (``ecmp-k``). Each engine runs the points itself (:mod:`simulator.sweep`,
:mod:`lab.sweep`), each point into its own directory, and writes with
:func:`write_sweep` ``sweep.json`` (per point: the axis values, the reduction of
kv-aware against ECMP, ``n``, the fewer completed transfers of the two modes, and validity) and
``sweep.png``: the reduction against the first axis, one line per value of the
second, with the design's 40-60% band shaded.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from controller.config import located
from controller.config.located import Node, compose
from controller.config.units import UnitError, parse_duration
from controller.errors import ConfigError
from experiment.errors import ScenarioError
from experiment.plots import plot_sweep
from experiment.scenario import LAB_MODES, ModeName, Scenario, Tool, parse_scenario

_STEP = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]")
STATS = ("p50", "p95", "p99", "mean")


@dataclass(frozen=True, slots=True)
class Axis:
    """One varied key of the scenario and its values (as written in YAML)."""

    name: str
    key: str
    values: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Sweep:
    """A validated sweep file."""

    name: str
    base_file: str
    base: Any
    axes: tuple[Axis, ...]
    modes: tuple[str, ...]
    stat: str
    source: str
    tool: Tool = Tool.LAB

    def points(self) -> list[dict[str, Any]]:
        """Every combination of axis values, first axis slowest."""
        names = [a.name for a in self.axes]
        return [
            dict(zip(names, combo, strict=True))
            for combo in itertools.product(*(a.values for a in self.axes))
        ]

    def point_text(self, point: dict[str, Any]) -> tuple[str, str]:
        """The YAML text of the point's scenario, and the name that locates it in errors."""
        doc = json.loads(json.dumps(self.base))  # a deep copy of plain YAML data
        for axis in self.axes:
            _set(doc, axis.key, point[axis.name], self.source, axis.name)
        label = point_label(point)
        doc["name"] = f"{doc.get('name', Path(self.base_file).stem)}.{label}"
        return yaml.safe_dump(doc, sort_keys=False), f"{self.base_file} at {label}"

    def scenario_at(self, point: dict[str, Any]) -> Scenario:
        """The base scenario with the point's values set, validated."""
        text, file = self.point_text(point)
        try:
            return parse_scenario(text, file, self.tool)
        except ScenarioError as exc:
            raise ScenarioError(self.source, f"axes ({point_label(point)})", str(exc)) from None


def point_label(point: Mapping[str, Any]) -> str:
    """A point as it appears in names: ``background_load-45pct.burst_size-2``."""
    return ".".join(f"{k}-{_label(x)}" for k, x in point.items())


def _label(x: Any) -> str:
    """A value as it can appear in a name: ``45%`` -> ``45pct``."""
    return re.sub(r"[^A-Za-z0-9_.\-]", "", str(x).replace("%", "pct"))


def _set(doc: Any, key: str, value: Any, source: str, axis: str) -> None:
    """Set ``key`` (``background[0].load``) of the plain YAML data ``doc`` to ``value``."""
    steps: list[str | int] = [
        m.group(1) if m.group(1) is not None else int(m.group(2)) for m in _STEP.finditer(key)
    ]
    if not steps or re.sub(r"\.", "", _STEP.sub("", key)):
        raise ScenarioError(source, f"axes.{axis}.key", f"not a key path: {key!r}")
    missing = ScenarioError(source, f"axes.{axis}.key", f"the base scenario has no {key!r}")
    target = doc
    try:
        for step in steps[:-1]:
            target = target[step]
    except (KeyError, IndexError, TypeError):
        raise missing from None
    last = steps[-1]
    if isinstance(last, str) and isinstance(target, dict):
        target[last] = value  # a mapping key may be new: it overrides a default
    elif isinstance(last, int) and isinstance(target, list) and 0 <= last < len(target):
        target[last] = value
    else:
        raise missing


def load_sweep(path: str | Path, tool: Tool = Tool.LAB) -> Sweep:
    """Load and validate a sweep file and its base scenario, for ``tool``."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(file, "", f"cannot read the file: {exc.strerror}") from None
    try:
        return _parse(compose(file, text), file, Path(path).parent, tool)
    except ConfigError as exc:
        raise ScenarioError(exc.file, exc.path, exc.message, exc.line, exc.col) from None


def _parse(root: Node, file: str, base_dir: Path, tool: Tool) -> Sweep:
    if root.raw is None:
        raise root.error("the file is empty; expected 'scenario' and 'axes'")
    f = root.fields(["scenario", "axes"], ["name", "modes", "stat"])
    base_path = base_dir / f["scenario"].text("a scenario file")
    try:
        base_text = base_path.read_text(encoding="utf-8")
    except OSError as exc:
        raise f["scenario"].error(f"cannot read {str(base_path)!r}: {exc.strerror}") from None
    parse_scenario(base_text, str(base_path), tool)  # the base itself must be valid
    axes = []
    for n in f["axes"].items():
        g = n.fields(["name", "key", "values"])
        values = tuple(x.value() for x in g["values"].items())
        if not values:
            raise g["values"].error("expected at least one value")
        axes.append(Axis(located.name(g["name"]), g["key"].text("a key path"), values))
    if not axes:
        raise f["axes"].error("expected at least one axis")
    modes = (
        tuple(str(located.choice(m, ModeName)) for m in f["modes"].items())
        if "modes" in f
        else ("ecmp", "kv-aware")
    )
    for n, mode in zip(f["modes"].items() if "modes" in f else [], modes, strict=False):
        if tool is Tool.LAB and mode not in LAB_MODES:
            raise n.error(f"mode {mode!r} is run only by `{Tool.SIMULATE}`, not by the lab")
    stat = f["stat"].text() if "stat" in f else "p99"
    if stat not in STATS:
        raise f["stat"].error(f"expected one of {', '.join(STATS)}, got {stat!r}")
    sweep = Sweep(
        name=located.name(f["name"]) if "name" in f else Path(file).stem,
        base_file=str(base_path),
        base=yaml.safe_load(base_text),
        axes=tuple(axes),
        modes=modes,
        stat=stat,
        source=file,
        tool=tool,
    )
    for point in sweep.points():  # every point must make a valid scenario
        sweep.scenario_at(point)
    return sweep


def samples(doc: Mapping[str, Any]) -> int | None:
    """The fewer samples of ECMP and kv-aware (completed or timed out, ``n``): what the
    point's statistic rests on."""
    modes = doc.get("modes")
    if not isinstance(modes, Mapping):
        return None
    counts = [
        m.get("n") for name in ("ecmp", "kv-aware") if isinstance(m := modes.get(name), Mapping)
    ]
    known = [c for c in counts if isinstance(c, int)]
    return min(known) if known else None


def write_sweep(
    sweep: Sweep, points: Sequence[dict[str, Any]], out: Path, mode: str = "kv-aware"
) -> None:
    """``sweep.json`` (the points) and ``sweep.png`` (``mode``'s reduction at the stat)."""
    (out / "sweep.json").write_text(json.dumps(list(points), indent=2) + "\n", encoding="utf-8")
    x = sweep.axes[0].name
    # one axis: one line, named after the sweep (not one line per value of the x axis)
    line = sweep.axes[1].name if len(sweep.axes) > 1 else "sweep"
    numeric = [
        {**p, "sweep": sweep.name, x: _number(p[x])} for p in points if _number(p[x]) is not None
    ]
    plot_sweep(numeric, out / "sweep.png", x_key=x, line_key=line, stat=sweep.stat, mode=mode)


def _number(x: Any) -> float | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, int | float):
        return float(x)
    if isinstance(x, str) and x.strip().endswith("%"):
        try:
            return float(x.strip()[:-1])
        except ValueError:
            return None
    if isinstance(x, str):  # a duration: seconds
        try:
            return parse_duration(x)
        except UnitError:
            return None
    return None
