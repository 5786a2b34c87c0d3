"""The scenario file: what traffic an experiment runs, on which fabric shape.

A scenario is one YAML document, validated once into frozen dataclasses. Every
problem is a :class:`~experiment.errors.ScenarioError` naming the file, the line and the key
path (``arrivals[1].window: expected a duration ...``), with a guess for misspelt
keys, exactly as the fabric file's errors (it uses the same located YAML reader)::

    name: design-example
    fabric: {spines: 2, leaves: 2, hosts_per_leaf: 4, link_rate: 20Mbps}
    shaping: {queue: 10, links: [{leaf: leaf1, spine: spine2, rate: 5Mbps}]}
    hosts: {senders: [h11, h12], receivers: [h21, h22], background: [h13, h23]}
    transfer: {model: llama-3-70b, dtype: bf16, tokens: 4096, real_link_rate: 400Gbps,
               lab_bytes: 2MB}
    arrivals:
      - {kind: sequential, count: 10, gap: 1s}
      - {kind: burst, size: 2, bursts: 10, window: 100ms, every: 8s}
      - {kind: poisson, count: 20, mean_gap: 2s}
    background:
      - {spine: spine1, load: 75%, protocol: udp}
      - {spine: spine2, load: 20%, after_failure: spine1}
    events:
      - {at: 20s, link: {leaf: leaf1, spine: spine1}, state: down}
    run: {warmup: 3s, transfer_timeout: 120s, settle: 2s}
    scheduling: {policy: srpt, max_wait: 2s, deadline: {min: 1s, max: 3s}}
    modes: [ecmp, flowlet, kv-aware, isolated, scheduled]

``fabric`` builds the fabric from parameters when the experiment is given no
topology file; ``shaping`` (queue size, slower links) applies to either. Host roles
default to the fabric's pools (prefill sends, decode receives, other carries the
background). Arrival phases run one after the other; what they generate is
:mod:`experiment.arrivals`' business. A burst phase's ``stagger`` spreads its starts over a
window (the sender holds each transfer back; its completion time still runs from
its arrival). ``scheduling`` is the ``scheduled`` mode's policy and the transfers'
deadlines (:mod:`experiment.scenario_sched`); ``modes`` defaults to every mode the tool runs,
``scheduled`` only when the scenario has a ``scheduling`` section.

Two tools read scenarios: the lab (``kvfabric experiment``) and the simulator
(``kvfabric simulate``). The simulator honours a few keys for scale that the lab
cannot build (:data:`ONLY_FOR`): bundles of uplinks per leaf, per-spine cable rates,
fewer prefill GPUs per rack, a third tier (``pods`` of the leaf-spine fabric the other
keys describe, joined by ``superspines``, each spine reaching every superspine over
``spine_uplinks / superspines`` cables of ``superspine_rate``), background on one
cable, capacity-change events and the ``simulation`` section (:mod:`experiment.scenario_sim`).
Each parse names its tool, and a key the tool does not honour is a located error that
names the tool that does.

A failure re-hashes every flow of the ECMP groups that lose a member, the background
included, in the lab and in both simulator engines alike: they hash the same planned
5-tuples (:mod:`experiment.background`). ``after_failure`` is **deprecated** (accepted
by both tools for this release, with a warning): it no longer moves anything, it only
restricts the planner to source ports that ECMP puts on ``spine`` before the
scenario's first failure (the cables its earliest ``down`` events take down) *and* on
``after_failure`` after it, which stages one outcome of the re-hash. It is kept one
release so that the lab's records of ``shifting-failure.yaml`` stay reproducible and
all three engines can be checked against them; a scenario should describe its
traffic, and let the hash decide where a failure moves it. It needs a ``down`` event,
and a spine the failure leaves connected to the flows' leaves (checked when the
background is planned).
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

import yaml

from controller.config import located
from controller.config.located import Node, compose
from controller.errors import ConfigError
from experiment.errors import ScenarioError
from experiment.kvsize import PRESETS, Dtype, ModelShape, preset
from experiment.scenario_sched import ScenarioScheduling, parse_scheduling
from experiment.scenario_sim import SimulationSettings, parse_simulation
from kvfabric.suggest import did_you_mean


class Tool(StrEnum):
    """The command that reads a scenario."""

    LAB = "kvfabric experiment"
    SIMULATE = "kvfabric simulate"


ONLY_FOR: dict[str, Tool] = {
    "fabric.uplinks_per_leaf": Tool.SIMULATE,
    "fabric.spine_rates": Tool.SIMULATE,
    "fabric.prefill_hosts_per_leaf": Tool.SIMULATE,
    "fabric.pods": Tool.SIMULATE,
    "fabric.superspines": Tool.SIMULATE,
    "fabric.spine_uplinks": Tool.SIMULATE,
    "fabric.superspine_rate": Tool.SIMULATE,
    "background[].link": Tool.SIMULATE,
    "events[].capacity": Tool.SIMULATE,
    "simulation": Tool.SIMULATE,
}
"""Keys (list indexes written ``[]``) that only one tool honours, and that tool."""


class Protocol(StrEnum):
    """Transport of a background flow."""

    UDP = "udp"
    TCP = "tcp"


class PhaseKind(StrEnum):
    """How a phase's transfers arrive."""

    SEQUENTIAL = "sequential"  # one at a time: each starts `gap` after the last one ends
    BURST = "burst"  # `bursts` bursts of `size` transfers starting within `window`
    POISSON = "poisson"  # `count` transfers with exponential gaps of mean `mean_gap`


class ModeName(StrEnum):
    """The modes an experiment compares."""

    ECMP = "ecmp"
    FLOWLET = "flowlet"
    KV_AWARE = "kv-aware"
    ISOLATED = "isolated"
    ECMP_K = "ecmp-k"  # the simulator only: k sub-flows, each hashed on its own
    SCHEDULED = "scheduled"  # kv-aware with the controller's temporal scheduling
    SPRAY = "spray"  # the simulator only: ideal per-packet spraying (a reference)
    BOUND = "bound"  # the simulator only: SRPT over pooled links, a per-transfer floor


LAB_MODES = (
    ModeName.ECMP,
    ModeName.FLOWLET,
    ModeName.KV_AWARE,
    ModeName.ISOLATED,
    ModeName.SCHEDULED,
)
"""The modes the lab runs (ecmp-k needs several connections per transfer)."""
UNSCHEDULED_MODES = tuple(m for m in LAB_MODES if m is not ModeName.SCHEDULED)
"""The lab's modes when a scenario has no ``scheduling`` section."""
ASKING_MODES = (ModeName.KV_AWARE, ModeName.ISOLATED, ModeName.SCHEDULED)
"""The modes whose senders ask the controller for every transfer."""
REFERENCE_MODES = (ModeName.SPRAY, ModeName.BOUND)
"""The simulator's physical references, which every mode is compared with: they run
when a scenario lists them, on the flow engine only."""


@dataclass(frozen=True, slots=True)
class FabricParams:
    """A regular leaf-spine fabric (``controller.config.generate.leaf_spine``'s plan)."""

    spines: int = 2
    leaves: int = 2
    hosts_per_leaf: int = 2
    link_bps: int = 20_000_000
    host_bps: int | None = None
    prefill_leaves: int | None = None
    uplinks_per_leaf: int | None = None  # a multiple of spines: bundles of parallel cables
    spine_rates: tuple[tuple[str, int], ...] = ()  # per-cable rate of a spine's cables
    prefill_hosts_per_leaf: int | None = None  # fewer GPUs in the prefill racks
    pods: int = 1  # copies of the leaf-spine fabric above, joined by the superspines
    superspines: int = 0
    spine_uplinks: int | None = None  # per spine, a multiple of superspines (default: one each)
    superspine_bps: int | None = None  # per cable (default: link_bps)

    @property
    def bundle(self) -> int:
        """Parallel cables between each leaf and each spine."""
        return 1 if self.uplinks_per_leaf is None else self.uplinks_per_leaf // self.spines

    @property
    def spine_bundle(self) -> int:
        """Parallel cables between each spine and each superspine."""
        if self.spine_uplinks is None or not self.superspines:
            return 1
        return self.spine_uplinks // self.superspines


@dataclass(frozen=True, slots=True)
class LinkRate:
    """A leaf-spine cable shaped to ``bps`` instead of its configured capacity."""

    leaf: str
    spine: str
    bps: int


@dataclass(frozen=True, slots=True)
class Shaping:
    """Queue size of every shaped interface (packets) and per-cable rate overrides."""

    queue_packets: int = 10
    links: tuple[LinkRate, ...] = ()


@dataclass(frozen=True, slots=True)
class HostRoles:
    """Which hosts send KV transfers, receive them, and carry background; None: default."""

    senders: tuple[str, ...] | None = None
    receivers: tuple[str, ...] | None = None
    background: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class TransferSize:
    """A real KV transfer and how it maps to the lab (see :mod:`experiment.kvsize`).

    ``model`` None means ``real_bytes`` was given directly.
    """

    real_bytes: int
    model: ModelShape | None = None
    dtype: Dtype = Dtype.BF16
    tokens: int | None = None
    real_link_bps: int = 400_000_000_000
    real_poll_interval_s: float = 0.1
    real_rtt_s: float = 10e-6
    lab_bytes: int | None = None
    time_scale: float | None = None


@dataclass(frozen=True, slots=True)
class Phase:
    """One arrival phase; only the fields of its kind are meaningful."""

    kind: PhaseKind
    count: int = 0
    gap_s: float = 1.0
    size: int = 1
    bursts: int = 0
    window_s: float = 0.0
    every_s: float = 0.0
    mean_gap_s: float = 1.0
    stagger_s: float = 0.0  # burst: starts spread evenly over this window

    @property
    def transfers(self) -> int:
        """How many transfers the phase generates."""
        return self.size * self.bursts if self.kind is PhaseKind.BURST else self.count


@dataclass(frozen=True, slots=True)
class BackgroundLoad:
    """Load ``spine`` (None: every spine) to ``load`` of its capacity with iperf3 flows.

    ``link`` (the simulator only) loads one leaf-spine cable instead, both directions.
    ``after_failure`` (deprecated): the spine the flows' source ports must make ECMP move
    them to when the scenario's failure re-hashes them (None: wherever the hash puts
    them).
    """

    spine: str | None
    load: float
    protocol: Protocol = Protocol.UDP
    link: tuple[str, str] | None = None
    after_failure: str | None = None


@dataclass(frozen=True, slots=True)
class LinkEvent:
    """At ``at_s`` into a mode's run, the leaf-spine cable goes down (or back up).

    ``capacity_bps`` (the simulator only) re-provisions the cable at that rate instead.
    """

    at_s: float
    leaf: str
    spine: str
    up: bool
    capacity_bps: int | None = None


@dataclass(frozen=True, slots=True)
class RunSettings:
    """Timing of one mode's run."""

    warmup_s: float = 3.0
    transfer_timeout_s: float = 120.0
    settle_s: float = 2.0


@dataclass(frozen=True, slots=True)
class Scenario:
    """A validated scenario; ``source`` is the file it came from."""

    name: str
    transfer: TransferSize
    phases: tuple[Phase, ...]
    description: str = ""
    fabric: FabricParams = FabricParams()
    shaping: Shaping = Shaping()
    hosts: HostRoles = HostRoles()
    background: tuple[BackgroundLoad, ...] = ()
    events: tuple[LinkEvent, ...] = ()
    run: RunSettings = RunSettings()
    modes: tuple[ModeName, ...] = UNSCHEDULED_MODES
    scheduling: ScenarioScheduling = field(default_factory=ScenarioScheduling)
    simulation: SimulationSettings = field(default_factory=SimulationSettings)
    source: str = field(default="<memory>", compare=False)

    @property
    def transfers(self) -> int:
        """How many KV transfers one run of a mode makes."""
        return sum(p.transfers for p in self.phases)

    @property
    def failed_cables(self) -> frozenset[tuple[str, str]]:
        """``(leaf, spine)`` cables down right after the first ``down`` event (and those at
        the same time): the failure that ``after_failure`` backgrounds are steered for."""
        downs = [e.at_s for e in self.events if not e.up]
        if not downs:
            return frozenset()
        first = min(downs)
        down: set[tuple[str, str]] = set()
        for e in sorted(self.events, key=lambda e: e.at_s):
            if e.at_s > first:
                break
            if e.capacity_bps is not None:  # a rate change, not a failure
                continue
            if e.up:
                down.discard((e.leaf, e.spine))
            else:
                down.add((e.leaf, e.spine))
        return frozenset(down)

    @property
    def max_concurrency(self) -> int:
        """The most transfers any phase starts together (a burst's size; 1 otherwise)."""
        return max((p.size if p.kind is PhaseKind.BURST else 1 for p in self.phases), default=1)


def load_scenario(path: str | Path, tool: Tool = Tool.LAB) -> Scenario:
    """Load and validate a scenario file for ``tool``."""
    return parse_scenario(located.read_file(path, ScenarioError), str(path), tool)


def parse_scenario(text: str, file: str = "<string>", tool: Tool = Tool.LAB) -> Scenario:
    """Validate the YAML ``text`` of a scenario for ``tool``; ``file`` names it in errors."""
    try:
        root = compose(file, text)
        _check_tool(root, tool)
        return _parse_document(root, file, tool)
    except ConfigError as exc:  # the located YAML reader's errors, in the lab's terms
        raise ScenarioError(exc.file, exc.path, exc.message, exc.line, exc.col) from None


# -- the grammar: one _parse_<section> per section ------------------------------------

_SECTIONS = [
    "name",
    "description",
    "fabric",
    "shaping",
    "hosts",
    "transfer",
    "arrivals",
    "background",
    "events",
    "run",
    "modes",
    "scheduling",
    "simulation",
]


def _check_tool(root: Node, tool: Tool) -> None:
    """Fail on the first key of :data:`ONLY_FOR` that another tool than ``tool`` honours."""
    if not root.is_mapping:
        return
    for path, node in _walk(root, ""):
        owner = ONLY_FOR.get(path)
        if owner is not None and owner is not tool:
            raise node.error(
                f"{node.path!r} is honoured only by `{owner}`, not by `{tool}`: "
                f"remove it, or run the scenario with `{owner}`"
            )


def _walk(node: Node, pattern: str) -> list[tuple[str, Node]]:
    """Every (path pattern, node) below ``node``, list indexes written ``[]``."""
    out: list[tuple[str, Node]] = []
    if node.is_mapping:
        for name, child in node.entries():
            p = f"{pattern}.{name}" if pattern else name
            out.append((p, child))
            out.extend(_walk(child, p))
    elif isinstance(node.raw, yaml.SequenceNode):
        for child in node.items():
            out.extend(_walk(child, f"{pattern}[]"))
    return out


def _parse_document(root: Node, file: str, tool: Tool = Tool.LAB) -> Scenario:
    if root.raw is None:
        raise root.error("the file is empty; expected the keys 'transfer' and 'arrivals'")
    required = ["transfer", "arrivals"]
    f = root.fields(required, [k for k in _SECTIONS if k not in required])
    phases = tuple(_parse_phase(n) for n in f["arrivals"].items())
    if not phases:
        raise f["arrivals"].error("expected at least one arrival phase")
    background = tuple(_parse_background(n) for n in _list(f, "background"))
    events = tuple(_parse_event(n) for n in _list(f, "events"))
    if not any(not e.up for e in events):
        for node, load in zip(_list(f, "background"), background, strict=True):
            if load.after_failure is not None:
                raise node.fields(*_BACKGROUND_KEYS)["after_failure"].error(
                    "'after_failure' needs a failure: no event takes a cable 'down'"
                )
    return Scenario(
        name=located.name(f["name"]) if "name" in f else Path(file).stem,
        description=located.string(f["description"]).strip() if "description" in f else "",
        fabric=located.optional(f, "fabric", FabricParams(), _parse_fabric),
        shaping=located.optional(f, "shaping", Shaping(), _parse_shaping),
        hosts=located.optional(f, "hosts", HostRoles(), _parse_hosts),
        transfer=_parse_transfer(f["transfer"]),
        phases=phases,
        background=background,
        events=events,
        run=located.optional(f, "run", RunSettings(), _parse_run),
        modes=(
            _parse_modes(f["modes"], tool)
            if "modes" in f
            else _default_modes(tool, scheduled="scheduling" in f)
        ),
        scheduling=located.optional(f, "scheduling", ScenarioScheduling(), parse_scheduling),
        simulation=(
            parse_simulation(f["simulation"], Path(file).parent)
            if "simulation" in f
            else SimulationSettings()
        ),
        source=file,
    )


def _list(f: dict[str, Node], key: str) -> list[Node]:
    return f[key].items() if key in f and not f[key].is_null else []


# fabric: {spines, leaves, hosts_per_leaf, link_rate, host_rate, prefill_leaves,
#          uplinks_per_leaf, spine_rates: {SPINE: RATE}, prefill_hosts_per_leaf,
#          pods, superspines, spine_uplinks, superspine_rate}
def _parse_fabric(node: Node) -> FabricParams:
    keys = ["spines", "leaves", "hosts_per_leaf", "link_rate", "host_rate", "prefill_leaves"]
    keys += ["uplinks_per_leaf", "spine_rates", "prefill_hosts_per_leaf"]
    keys += ["pods", "superspines", "spine_uplinks", "superspine_rate"]
    f = node.fields([], keys)
    d = FabricParams()
    leaves = located.optional(f, "leaves", d.leaves, located.integer, 1, 254)
    spines = located.optional(f, "spines", d.spines, located.integer, 1, 64)
    tier3 = _parse_third_tier(f, leaves)
    pods = tier3.pods
    hosts = located.optional(f, "hosts_per_leaf", d.hosts_per_leaf, located.integer, 1, 64)
    uplinks = _bundled(f, "uplinks_per_leaf", spines, ("leaf", "spine"))
    spine_rates: list[tuple[str, int]] = []
    if "spine_rates" in f:
        known = [f"spine{i}" for i in range(1, spines * pods + 1)]
        for name, rate in f["spine_rates"].entries():
            if name not in known:
                raise rate.error(f"no spine {name!r}{did_you_mean(name, known)}")
            spine_rates.append((name, located.capacity(rate)))
    prefill_hosts = None
    if "prefill_hosts_per_leaf" in f:
        prefill_hosts = located.integer(f["prefill_hosts_per_leaf"], 1, hosts)
    return dataclasses.replace(
        tier3,
        spines=spines,
        uplinks_per_leaf=uplinks,
        spine_rates=tuple(spine_rates),
        prefill_hosts_per_leaf=prefill_hosts,
        leaves=leaves,
        hosts_per_leaf=hosts,
        link_bps=located.optional(f, "link_rate", d.link_bps, located.capacity),
        host_bps=located.optional(f, "host_rate", None, located.capacity),
        prefill_leaves=located.optional(
            f, "prefill_leaves", None, located.integer, 1, leaves * pods - 1
        ),
    )


def _bundled(f: dict[str, Node], key: str, above: int, tiers: tuple[str, str]) -> int | None:
    """Uplinks per switch (``key``): a multiple of the ``above`` switches of the next tier."""
    if key not in f:
        return None
    uplinks = located.integer(f[key], above, 64 * above)
    if uplinks % above:
        near, far = tiers
        raise f[key].error(
            f"expected a multiple of the {above} {far}s (each {near} reaches every {far} "
            f"over the same number of cables), got {uplinks}"
        )
    return uplinks


def _parse_third_tier(f: dict[str, Node], leaves: int) -> FabricParams:
    """``pods``, ``superspines``, ``spine_uplinks`` and ``superspine_rate``: both of the
    first two or neither; the others need them."""
    if "pods" not in f and "superspines" not in f:
        for key in ("spine_uplinks", "superspine_rate"):
            if key in f:
                raise f[key].error(f"{key!r} goes with 'pods' and 'superspines' (a third tier)")
        return FabricParams()
    for key, other in (("pods", "superspines"), ("superspines", "pods")):
        if key not in f:
            raise f[other].error("a third tier needs both 'pods' and 'superspines'")
    pods = located.integer(f["pods"], 2, 64)
    if leaves * pods > 254:
        raise f["pods"].error(
            f"{pods} pods of {leaves} leaves make {leaves * pods}; the addressing plan has "
            "room for 254 leaves"
        )
    superspines = located.integer(f["superspines"], 1, 64)
    uplinks = _bundled(f, "spine_uplinks", superspines, ("spine", "superspine"))
    rate = located.optional(f, "superspine_rate", None, located.capacity)
    return FabricParams(
        pods=pods, superspines=superspines, spine_uplinks=uplinks, superspine_bps=rate
    )


# shaping: {queue, links: [{leaf, spine, rate}]}
def _parse_shaping(node: Node) -> Shaping:
    f = node.fields([], ["queue", "links"])
    links = []
    for n in _list(f, "links"):
        g = n.fields(["leaf", "spine", "rate"])
        links.append(
            LinkRate(located.name(g["leaf"]), located.name(g["spine"]), located.capacity(g["rate"]))
        )
    return Shaping(
        queue_packets=located.optional(f, "queue", 10, located.integer, 2, 100_000),
        links=tuple(links),
    )


# hosts: {senders, receivers, background}: lists of host names
def _parse_hosts(node: Node) -> HostRoles:
    f = node.fields([], ["senders", "receivers", "background"])

    def names(key: str) -> tuple[str, ...] | None:
        if key not in f:
            return None
        out = tuple(located.name(n) for n in f[key].items())
        if len(set(out)) != len(out):
            raise f[key].error("a host is listed twice")
        return out

    return HostRoles(names("senders"), names("receivers"), names("background"))


# transfer: {model, dtype, tokens | bytes, real_link_rate, real_poll_interval, real_rtt,
#            lab_bytes | time_scale}
def _parse_transfer(node: Node) -> TransferSize:
    keys = ["model", "dtype", "tokens", "bytes", "real_link_rate", "real_poll_interval"]
    keys += ["real_rtt", "lab_bytes", "time_scale"]
    f = node.fields([], keys)
    located.one_of_keys(node, f, ["model", "bytes"])
    located.one_of_keys(node, f, ["lab_bytes", "time_scale"])
    model = None
    dtype = Dtype.BF16
    tokens = None
    if "model" in f:
        if "tokens" not in f:
            raise node.error("a 'model' needs 'tokens' (the request's length)")
        name = f["model"].text("a model preset name")
        try:
            model = preset(name)
        except KeyError as exc:
            raise f["model"].error(str(exc.args[0])) from None
        dtype = located.optional(f, "dtype", Dtype.BF16, located.choice, Dtype)
        tokens = located.integer(f["tokens"], 1, 10_000_000)
        real_bytes = model.kv_bytes(tokens, dtype)
    elif "bytes" in f:
        for key in ("dtype", "tokens"):
            if key in f:
                raise f[key].error(f"{key!r} goes with 'model', not with 'bytes'")
        real_bytes = byte_size(f["bytes"])
    else:
        raise node.error(f"expected 'model' (one of {', '.join(PRESETS)}) and 'tokens', or 'bytes'")
    d = TransferSize(real_bytes=0)
    return TransferSize(
        real_bytes=real_bytes,
        model=model,
        dtype=dtype,
        tokens=tokens,
        real_link_bps=located.optional(f, "real_link_rate", d.real_link_bps, located.capacity),
        real_poll_interval_s=located.optional(
            f, "real_poll_interval", d.real_poll_interval_s, located.duration, 1e-6, 3600.0
        ),
        real_rtt_s=located.optional(f, "real_rtt", d.real_rtt_s, located.duration, 1e-9, 10.0),
        lab_bytes=located.optional(f, "lab_bytes", None, byte_size),
        time_scale=located.optional(f, "time_scale", None, located.number, 1e-9),
    )


# arrivals: [{kind: sequential, count, gap}
#            | {kind: burst, size, bursts, window, every, stagger}
#            | {kind: poisson, count, mean_gap}]
_PHASE_KEYS = {
    PhaseKind.SEQUENTIAL: (["count"], ["gap"]),
    PhaseKind.BURST: (["size", "bursts", "every"], ["window", "stagger"]),
    PhaseKind.POISSON: (["count", "mean_gap"], []),
}


def _parse_phase(node: Node) -> Phase:
    kind_node = node.fields(["kind"], [k for r, o in _PHASE_KEYS.values() for k in [*r, *o]])
    kind = located.choice(kind_node["kind"], PhaseKind)
    required, optional = _PHASE_KEYS[kind]
    f = node.fields(["kind", *required], optional)
    if kind is PhaseKind.SEQUENTIAL:
        gap = located.optional(f, "gap", 1.0, located.duration, 0.0, 3600.0)
        return Phase(kind, count=located.integer(f["count"], 1, 100_000), gap_s=gap)
    if kind is PhaseKind.POISSON:
        return Phase(
            kind,
            count=located.integer(f["count"], 1, 100_000),
            mean_gap_s=located.duration(f["mean_gap"], 1e-3, 3600.0),
        )
    window = located.optional(f, "window", 0.0, located.duration, 0.0, 3600.0)
    every = located.duration(f["every"], 1e-3, 3600.0)
    if window > every:
        raise f["window"].error(f"a burst's window must fit in its period ('every': {every:g}s)")
    stagger = located.duration(f["stagger"], 0.0, 3600.0) if "stagger" in f else 0.0
    if stagger > every:
        raise f["stagger"].error(f"a burst's stagger must fit in its period ('every': {every:g}s)")
    return Phase(
        kind,
        size=located.integer(f["size"], 1, 1024),
        bursts=located.integer(f["bursts"], 1, 100_000),
        window_s=window,
        every_s=every,
        stagger_s=stagger,
    )


AFTER_FAILURE_DEPRECATED = (
    "deprecated, and dropped in the next release: the background re-hashes by itself in "
    "the lab and in both simulator engines; this key only restricts the source ports it "
    "is planned with, to stage where the failure moves it. Remove it to let the hash "
    "decide."
)


def _deprecated(node: Node, message: str) -> None:
    """A :class:`FutureWarning` located at ``node`` (file, line, key path)."""
    where = node.error(message)
    warnings.warn_explicit(f"{where.path}: {message}", FutureWarning, where.file, where.line or 0)


# background: [{spine: NAME | all, load, protocol, after_failure: NAME}
#              | {link: {leaf, spine}, load, protocol}]
_BACKGROUND_KEYS = (["load"], ["spine", "link", "protocol", "after_failure"])


def _parse_background(node: Node) -> BackgroundLoad:
    f = node.fields(*_BACKGROUND_KEYS)
    located.one_of_keys(node, f, ["spine", "link"])
    load = located.fraction(f["load"], 0.0, 1.0)
    protocol = located.optional(f, "protocol", Protocol.UDP, located.choice, Protocol)
    if "link" in f:
        if "after_failure" in f:
            raise f["after_failure"].error("'after_failure' goes with 'spine', not with 'link'")
        link = f["link"].fields(["leaf", "spine"])
        cable = (located.name(link["leaf"]), located.name(link["spine"]))
        return BackgroundLoad(spine=None, load=load, protocol=protocol, link=cable)
    if "spine" not in f:
        raise node.error("expected 'spine' (a spine name or 'all') or 'link' ({leaf, spine})")
    spine_text = f["spine"].text("a spine name or 'all'")
    if "after_failure" in f:
        _deprecated(f["after_failure"], AFTER_FAILURE_DEPRECATED)
    return BackgroundLoad(
        spine=None if spine_text == "all" else located.name(f["spine"]),
        load=load,
        protocol=protocol,
        after_failure=located.optional(f, "after_failure", None, located.name),
    )


# events: [{at, link: {leaf, spine}, state: down | up} | {at, link, capacity: RATE}]
def _parse_event(node: Node) -> LinkEvent:
    f = node.fields(["at", "link"], ["state", "capacity"])
    located.one_of_keys(node, f, ["state", "capacity"])
    link = f["link"].fields(["leaf", "spine"])
    at, leaf, spine = (
        located.duration(f["at"], 0.0, 86400.0),
        located.name(link["leaf"]),
        located.name(link["spine"]),
    )
    if "capacity" in f:
        return LinkEvent(at, leaf, spine, up=True, capacity_bps=located.capacity(f["capacity"]))
    if "state" not in f:
        raise node.error("expected 'state' (down or up) or 'capacity' (a rate)")
    state = f["state"].text("'down' or 'up'")
    if state not in ("down", "up"):
        raise f["state"].error(f"expected 'down' or 'up', got {state!r}")
    return LinkEvent(at, leaf, spine, up=state == "up")


# run: {warmup, transfer_timeout, settle}
def _parse_run(node: Node) -> RunSettings:
    f = node.fields([], ["warmup", "transfer_timeout", "settle"])
    d = RunSettings()
    return RunSettings(
        warmup_s=located.optional(f, "warmup", d.warmup_s, located.duration, 0.0, 600.0),
        transfer_timeout_s=located.optional(
            f, "transfer_timeout", d.transfer_timeout_s, located.duration, 0.1, 86400.0
        ),
        settle_s=located.optional(f, "settle", d.settle_s, located.duration, 0.0, 600.0),
    )


def _default_modes(tool: Tool, *, scheduled: bool) -> tuple[ModeName, ...]:
    if tool is Tool.SIMULATE:
        modes = tuple(m for m in ModeName if m not in REFERENCE_MODES)
    else:
        modes = LAB_MODES
    return modes if scheduled else tuple(m for m in modes if m is not ModeName.SCHEDULED)


def _parse_modes(node: Node, tool: Tool) -> tuple[ModeName, ...]:
    modes = tuple(located.choice(n, ModeName) for n in node.items())
    for n, mode in zip(node.items(), modes, strict=True):
        if tool is Tool.LAB and mode in REFERENCE_MODES:
            raise n.error(
                f"mode {str(mode)!r} is a physical reference of `{Tool.SIMULATE}` (ideal "
                f"spraying, SRPT over pooled links), not a placement `{tool}` can run"
            )
        if tool is Tool.LAB and mode not in LAB_MODES:
            raise n.error(f"mode {str(mode)!r} is run only by `{Tool.SIMULATE}`, not by `{tool}`")
    if not modes:
        raise node.error("expected at least one mode")
    if len(set(modes)) != len(modes):
        raise node.error("a mode is listed twice")
    return modes


# -- units ---------------------------------------------------------------------------

_BYTES = re.compile(r"^\s*(?P<num>\d+(?:\.\d+)?)\s*(?P<prefix>[kKMGT]i?)?B?\s*$")
_BYTE_PREFIX = {
    "": 1,
    "k": 10**3,
    "K": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
}


def parse_bytes(text: str) -> int:
    """Bytes of ``'2MB'``, ``'1.34GB'``, ``'512KiB'`` or ``'2000000'``; ValueError otherwise."""
    m = _BYTES.match(text)
    if m is None or (m.group("prefix") and not text.rstrip().endswith("B")):
        raise ValueError("expected a size such as '2MB', '512KiB' or a number of bytes")
    value = float(m.group("num")) * _BYTE_PREFIX[m.group("prefix") or ""]
    return round(value)


def byte_size(node: Node) -> int:
    """A positive size in bytes: an integer, or text such as ``2MB``."""
    return located.positive_amount(node, "size", "'2MB'", parse_bytes)
