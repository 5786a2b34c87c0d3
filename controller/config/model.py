"""The fabric's model: frozen dataclasses only, as every loader of :mod:`controller.config`
returns them (no parsing here, so that nothing in the package imports its loaders back)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path

from kvfabric.suggest import did_you_mean

MAX_PORT = 510
"""Highest front-panel port number; BMv2 reserves 511 as the drop port."""


class Role(StrEnum):
    """What a switch is in the fabric. ``superspine`` (a third tier joining pods of
    leaves and spines) exists only in fabrics the simulator builds: the controller
    drives leaf-spine fabrics, and its fabric files refuse the role."""

    LEAF = "leaf"
    SPINE = "spine"
    SUPERSPINE = "superspine"


class Pool(StrEnum):
    """The GPU pool a host belongs to: KV caches move from prefill to decode."""

    PREFILL = "prefill"
    DECODE = "decode"
    OTHER = "other"


class Mode(StrEnum):
    """How KV transfers are placed: pinned by the controller, or the two baselines."""

    KV_AWARE = "kv-aware"
    ECMP = "ecmp"
    FLOWLET = "flowlet"


class Policy(StrEnum):
    """When a transfer whose best path is shared may start: ``none`` sends every
    transfer at once (no holding); the others order each path's queue by arrival
    (``fifo``), by size (``srpt``, shortest first) or by deadline (``edf``)."""

    NONE = "none"
    FIFO = "fifo"
    SRPT = "srpt"
    EDF = "edf"


@dataclass(frozen=True, slots=True)
class SwitchConfig:
    """A P4 switch; ``p4runtime`` is its gRPC target ``host:port``."""

    name: str
    role: Role
    p4runtime: str
    device_id: int
    election_id: int | None = None
    subnet: IPv4Network | None = None


@dataclass(frozen=True, slots=True)
class HostConfig:
    """A host on port ``port`` of leaf ``leaf``; its link runs at ``capacity_bps``."""

    name: str
    leaf: str
    port: int
    ipv4: IPv4Address
    prefix_len: int
    mac: str
    pool: Pool
    capacity_bps: int


@dataclass(frozen=True, slots=True)
class LinkEnd:
    """One end of a link: a switch port."""

    switch: str
    port: int

    def __str__(self) -> str:
        return f"{self.switch}:{self.port}"


@dataclass(frozen=True, slots=True)
class LinkConfig:
    """A full-duplex link between a leaf and a spine, ``capacity_bps`` each way."""

    a: LinkEnd
    b: LinkEnd
    capacity_bps: int


@dataclass(frozen=True, slots=True)
class TelemetrySettings:
    """Counter polling: how often, when a switch's picture is too old, and smoothing."""

    poll_interval_s: float = 0.1
    staleness_limit_s: float = 0.5
    smoothing_s: float = 0.2


@dataclass(frozen=True, slots=True)
class SelectionSettings:
    """Path choice: hysteresis band, the rate limit of path changes, and the cost bound.

    ``max_cost_ratio``: no rule (hysteresis, rate limit, a reroute mark) keeps a path
    whose expected completion exceeds this many times the best candidate's.
    ``inflight_accounting``: count the bytes of the engine's own placements on their
    ports until they complete (off: every decision sees only the last poll, as a
    controller that does not track its own transfers would; for studies of herding).
    ``max_slices``: how many spines one transfer may be split over (one tagged
    connection per slice); None: enough slices for the source host's NIC over one
    uplink, its leaf's slowest (a 400 Gb/s NIC behind 100 Gb/s uplinks: 4, and still 4
    when one of them is re-provisioned at 400 Gb/s); 1: no slices.
    """

    hysteresis: float = 0.10
    util_delta: float = 0.10
    latency_factor: float = 1.5
    max_cost_ratio: float = 2.0
    inflight_accounting: bool = True
    max_slices: int | None = None


@dataclass(frozen=True, slots=True)
class SafetySettings:
    """Baselines, rerouting of slow pairs, the fallback to ECMP, transfer deadlines.

    A transfer times out after ``timeout_factor`` times its expected completion, at
    least ``transfer_timeout_s`` and at most ``transfer_timeout_max_s``.
    """

    slow_factor: float = 2.0
    baseline_window: int = 20
    baseline_min_samples: int = 3
    reroute_limit: int = 5
    reroute_window_s: float = 60.0
    quiet_period_s: float = 300.0
    transfer_timeout_s: float = 30.0
    timeout_factor: float = 4.0
    transfer_timeout_max_s: float = 600.0


@dataclass(frozen=True, slots=True)
class KvClassSettings:
    """How senders mark KV transfers: a DSCP value, and a source port from a range.

    The range is split evenly among the spines, in the fabric file's order: each spine
    owns :meth:`range_size` consecutive ports (:meth:`spine_ranges`), and the leaves
    send a tagged transfer up the spine whose range holds its source port
    (p4/README.md, Spine ranges). The ports left over are never handed out.
    """

    dscp: int = 10
    tag_port_first: int = 40000
    tag_port_last: int = 40999

    def range_size(self, spines: int) -> int:
        """How many tag ports each of ``spines`` spines owns (0: too few ports)."""
        return (self.tag_port_last - self.tag_port_first + 1) // max(1, spines)

    def spine_ranges(self, spines: Sequence[str]) -> dict[str, tuple[int, int]]:
        """The first and last tag port of each spine's range, in the order given."""
        size = self.range_size(len(spines))
        first = self.tag_port_first
        return {s: (first + k * size, first + (k + 1) * size - 1) for k, s in enumerate(spines)}


@dataclass(frozen=True, slots=True)
class ApiSettings:
    """The coordinators' HTTP API: where it listens, its optional bearer token, and how
    long single path requests wait to be decided together (``coalesce_window_s``, 0:
    each at once)."""

    host: str = "127.0.0.1"
    port: int = 8080
    token: str | None = field(default=None, repr=False)
    coalesce_window_s: float = 0.0


COALESCE_LIMIT_S = 0.1
"""The longest ``api.coalesce_window`` the fabric file accepts."""


@dataclass(frozen=True, slots=True)
class TlsSettings:
    """P4Runtime client TLS: the CA that signs the switches, and an optional client pair."""

    ca_cert: Path
    cert: Path | None = None
    key: Path | None = None


@dataclass(frozen=True, slots=True)
class AlertSettings:
    """The design's alert thresholds."""

    window_s: float = 300.0
    p99_limit_s: float = 0.100
    p99_rise: float = 0.20
    median_window_s: float = 7 * 86400.0
    efficiency_min: float = 0.80
    efficiency_windows: int = 2
    efficiency_tolerance: float = 0.05
    tier_mean_max: float = 0.70
    tier_p95_max: float = 0.85


@dataclass(frozen=True, slots=True)
class SchedulingSettings:
    """Temporal scheduling of KV transfers (:mod:`controller.engine.schedule`).

    ``policy`` orders the transfers held behind others on a path; none is ever held
    longer than ``max_wait_s``, or ``batch_max_wait_s`` for a batch's members (a burst
    decided as one, :mod:`controller.engine.batch`; None: ``max_wait_s``).
    """

    policy: Policy = Policy.NONE
    max_wait_s: float = 0.05
    batch_max_wait_s: float | None = None

    @property
    def batch_wait_s(self) -> float:
        """The longest a batch's member is held."""
        return self.max_wait_s if self.batch_max_wait_s is None else self.batch_max_wait_s


MAX_WAIT_LIMIT_S = 60.0
"""The longest ``max_wait`` the fabric file accepts."""


@dataclass(frozen=True, slots=True)
class ControllerSettings:
    """Everything the controller service reads from the ``controller:`` section."""

    mode: Mode = Mode.KV_AWARE
    telemetry: TelemetrySettings = TelemetrySettings()
    selection: SelectionSettings = SelectionSettings()
    safety: SafetySettings = SafetySettings()
    kv_class: KvClassSettings = KvClassSettings()
    api: ApiSettings = ApiSettings()
    p4runtime_tls: TlsSettings | None = None
    alerts: AlertSettings = AlertSettings()
    scheduling: SchedulingSettings = SchedulingSettings()
    audit_interval_s: float = 0.1
    audit_hold_s: float = 2.0
    audit_misses: int = 2
    flowlet_timeout_s: float = 0.05


@dataclass(frozen=True, slots=True)
class FabricConfig:
    """A validated fabric; ``source`` is the file it came from."""

    name: str
    switches: tuple[SwitchConfig, ...]
    hosts: tuple[HostConfig, ...]
    links: tuple[LinkConfig, ...]
    controller: ControllerSettings = ControllerSettings()
    source: str = "<memory>"

    @property
    def leaves(self) -> tuple[SwitchConfig, ...]:
        """The leaf switches, in file order."""
        return tuple(s for s in self.switches if s.role is Role.LEAF)

    @property
    def spines(self) -> tuple[SwitchConfig, ...]:
        """The spine switches, in file order."""
        return tuple(s for s in self.switches if s.role is Role.SPINE)

    @property
    def superspines(self) -> tuple[SwitchConfig, ...]:
        """The superspine switches (simulated fabrics only), in file order."""
        return tuple(s for s in self.switches if s.role is Role.SUPERSPINE)

    def switch(self, name: str) -> SwitchConfig:
        """The switch called ``name``; a KeyError says which names are close."""
        for s in self.switches:
            if s.name == name:
                return s
        raise KeyError(f"no switch named {name!r}{did_you_mean(name, self._switch_names())}")

    def host(self, name: str) -> HostConfig:
        """The host called ``name``; a KeyError says which names are close."""
        for h in self.hosts:
            if h.name == name:
                return h
        names = [h.name for h in self.hosts]
        raise KeyError(f"no host named {name!r}{did_you_mean(name, names)}")

    def hosts_of(self, leaf: str) -> tuple[HostConfig, ...]:
        """The hosts on ``leaf``, in file order."""
        return tuple(h for h in self.hosts if h.leaf == leaf)

    def _switch_names(self) -> list[str]:
        return [s.name for s in self.switches]
