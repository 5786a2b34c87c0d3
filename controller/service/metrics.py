"""Every Prometheus metric of the controller, in one class, on its own registry.

Two kinds of metric live here:

- what the shell itself observes (API latency, pin writes, reconciliation writes,
  telemetry polls, audit rounds, alert transitions, switch channels): ordinary
  counters, gauges and histograms updated as things happen;
- what the engine knows (placements, completions, reroutes, fallbacks, efficiency,
  per-tier utilisation, staleness, active alerts, link status, each port's capacity
  against the fabric file's and what its switch reports of it): read at scrape time
  from a :class:`Scrape` the service builds from the engine's snapshot
  (:class:`~controller.engine.snapshot.Snapshot`), so the numbers are the engine's own
  and never drift from ``GET /v1/fabric``.

The registry is private to one :class:`Metrics` (no process-global default), so two
controllers in one process, or one per test, never share a sample.

Alert conditions of the design are all visible as ``kvfabric_alert_active`` (one
series per active alert) and ``kvfabric_alerts_total`` (firings), besides the log.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from controller.engine.snapshot import Counts

LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.02, 0.05, 0.1, 0.5, 1.0)
QUEUE_BUCKETS = (0.0, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 5.0, 60.0)
TRANSFER_BUCKETS = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass(frozen=True, slots=True)
class Scrape:
    """What one scrape reads: the engine's figures at one instant, and the service's
    transfers in flight, as the metrics need them."""

    counts: Counts
    mode: str
    effective_mode: str
    fallback_active: bool
    efficiency_evaluated: int
    efficiency_efficient: int
    efficiency_last: float | None
    tiers: Mapping[str, tuple[float, float]]
    staleness_s: Mapping[str, float | None]
    alerts: Sequence[tuple[str, str, str]]
    links: Sequence[tuple[str, str]]
    pins: int
    in_flight: int
    modes: Sequence[str] = field(default_factory=tuple)
    flow_pins: Mapping[str, int] = field(default_factory=dict)
    held: Mapping[str, int] = field(default_factory=dict)
    ports: Sequence[PortFigures] = ()
    unmodelled: Sequence[str] = ()
    """Ports a switch reports up that the fabric file does not know."""


@dataclass(frozen=True, slots=True)
class PortFigures:
    """One egress port at a scrape: its capacity in force and in the fabric file, and the
    speed and oper-status its switch last reported (None: unknown, or no report)."""

    port: str
    capacity_bps: int
    file_capacity_bps: int
    speed_bps: int | None = None
    up: bool | None = None


class Metrics:
    """The controller's metrics (see the module docstring)."""

    def __init__(self, scrape: Callable[[], Scrape] | None = None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.api_seconds = self._histogram(
            "kvfabric_api_request_seconds",
            "Time to answer an API request, by endpoint",
            LATENCY_BUCKETS,
            "endpoint",
        )
        self.api_requests = self._counter(
            "kvfabric_api_requests",
            "API requests, by endpoint and HTTP status",
            "endpoint",
            "status",
        )
        self.api_handoffs = self._counter(
            "kvfabric_api_handoffs",
            "Connections the API's fast lane handed to aiohttp (a request not plain, or a stream)",
        )
        self.decision_seconds = self._histogram(
            "kvfabric_decision_seconds",
            "From a transfer request to its answer (a decision writes nothing to a switch)",
            LATENCY_BUCKETS,
        )
        self.transfer_seconds = self._histogram(
            "kvfabric_transfer_duration_seconds",
            "Transfer durations reported by the senders (p50/p95/p99 from the buckets)",
            TRANSFER_BUCKETS,
        )
        self.queue_seconds = self._histogram(
            "kvfabric_transfer_queue_seconds",
            "From a transfer request to its granted start (0 when it may start at once)",
            QUEUE_BUCKETS,
        )
        self.ledger_writes = self._counter(
            "kvfabric_ledger_writes",
            "Range entries whose ledger of transfers in flight was rewritten (a handful per "
            "leaf and poll interval, off the decisions' path)",
        )
        self.pin_writes = self._counter(
            "kvfabric_pin_writes", "Pin entries written, by operation and result", "op", "result"
        )
        self.reconcile_writes = self._counter(
            "kvfabric_reconcile_writes",
            "Entities written by reconciliation, by switch and operation",
            "switch",
            "op",
        )
        self.reconciliations = self._counter(
            "kvfabric_reconciliations", "Completed reconciliations, by switch", "switch"
        )
        self.pins_adopted = self._counter(
            "kvfabric_pins_adopted",
            "Transfers in flight (in a leaf's ledger) and flow pins found on a leaf and adopted",
            "switch",
        )
        self.pins_removed_stale = self._counter(
            "kvfabric_pins_removed_stale",
            "Transfers found in a leaf's ledger past their deadline, and dropped",
            "switch",
        )
        self.polls = self._counter(
            "kvfabric_telemetry_polls", "Telemetry polls, by switch and result", "switch", "result"
        )
        self.poll_seconds = self._histogram(
            "kvfabric_telemetry_poll_seconds",
            "Duration of one concurrent poll of every switch",
            LATENCY_BUCKETS,
        )
        self.audit_rounds = self._counter(
            "kvfabric_audit_rounds", "Topology audit rounds (probes sent and judged)"
        )
        self.probes_seen = self._counter(
            "kvfabric_probes_seen", "Link probes that came back as PacketIns"
        )
        self.probes_rejected = self._counter(
            "kvfabric_probes_rejected",
            "PacketIns that looked like link probes but were dropped, by reason (a probe "
            "from a host port, an unknown nonce or sender: forged, or older than the "
            "accepted rounds)",
            "reason",
        )
        self.probe_seconds = self._histogram(
            "kvfabric_probe_round_trip_seconds",
            "From a probe's PacketOut to its PacketIn (late ones: after the round's window)",
            LATENCY_BUCKETS,
        )
        self.alerts = self._counter(
            "kvfabric_alerts",
            "Alerts that started firing, by name and severity",
            "name",
            "severity",
        )
        self.port_updates = self._counter(
            "kvfabric_port_state_updates",
            "gNMI updates of the switches' port speeds and oper-status received, by switch",
            "switch",
        )
        self.capacity_changes = self._counter(
            "kvfabric_capacity_changes",
            "Changes of a port's capacity in the model (its switch reported another speed)",
            "port",
        )
        self.link_changes = self._counter(
            "kvfabric_link_status_changes", "Audit verdicts that changed a cable's status", "status"
        )
        self.mode_changes = self._counter(
            "kvfabric_mode_changes", "Data-plane mode changes applied, by mode", "mode"
        )
        self.switch_up = self._gauge(
            "kvfabric_switch_up", "1 while the P4Runtime channel to the switch is open", "switch"
        )
        self.switch_primary = self._gauge(
            "kvfabric_switch_primary", "1 while this controller is the switch's primary", "switch"
        )
        self.write_errors = self._counter(
            "kvfabric_switch_errors", "Failed P4Runtime calls, by switch and call", "switch", "call"
        )
        if scrape is not None:
            self.registry.register(_EngineCollector(scrape))

    def _counter(self, name: str, help_text: str, *labels: str) -> Counter:
        return Counter(name, help_text, labels, registry=self.registry)

    def _gauge(self, name: str, help_text: str, *labels: str) -> Gauge:
        return Gauge(name, help_text, labels, registry=self.registry)

    def _histogram(
        self, name: str, help_text: str, buckets: Sequence[float], *labels: str
    ) -> Histogram:
        return Histogram(name, help_text, labels, buckets=buckets, registry=self.registry)

    def render(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        data: bytes = generate_latest(self.registry)
        return data


class _EngineCollector:
    """Scrape-time metrics read from a :class:`Scrape`."""

    def __init__(self, scrape: Callable[[], Scrape]) -> None:
        self._scrape = scrape

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        s = self._scrape()
        c = s.counts
        placed = CounterMetricFamily(
            "kvfabric_transfers", "Transfers answered, by placement", labels=["placement"]
        )
        placed.add_metric(["pinned"], c.pinned)
        placed.add_metric(["ecmp"], c.ecmp)
        placed.add_metric(["local"], c.local)
        yield placed
        for name, help_text, value in (
            ("kvfabric_transfers_completed", "Transfers reported complete", c.completed),
            ("kvfabric_transfer_timeouts", "Transfers that timed out", c.timeouts),
            ("kvfabric_transfers_late", "Completions reported after their transfer timed out",
             c.late),
            ("kvfabric_reroutes", "Pairs rerouted after a slow transfer", c.reroutes),
            ("kvfabric_fallback_trips", "Times the reroute limit disabled kv-aware", c.trips),
            ("kvfabric_transfers_moved", "Transfers that followed their spine range elsewhere "
             "(a cable broke or came back, or the mode turned the ranges off or on)", c.moved),
            ("kvfabric_transfer_holds", "Transfers told to wait for a release", c.held),
            ("kvfabric_transfers_cancelled", "Held transfers cancelled before their release",
             c.cancelled),
            ("kvfabric_probes_missed", "Link probes not back in their round (lost or dead link)",
             c.probes_missed),
            ("kvfabric_efficiency_evaluated", "Transfers judged offline", s.efficiency_evaluated),
            ("kvfabric_efficiency_efficient", "Judged transfers on the best path",
             s.efficiency_efficient),
        ):  # fmt: skip
            yield CounterMetricFamily(name, help_text, value=value)
        fallbacks = CounterMetricFamily(
            "kvfabric_fallbacks", "Transfers left to ECMP, by reason", labels=["reason"]
        )
        for reason, n in sorted(c.fallbacks.items()):
            fallbacks.add_metric([reason], n)
        yield fallbacks
        yield GaugeMetricFamily(
            "kvfabric_fallback_active",
            "1 while the reroute limit holds kv-aware placement off",
            value=1.0 if s.fallback_active else 0.0,
        )
        mode = GaugeMetricFamily(
            "kvfabric_mode", "1 for the placement mode in force", labels=["mode"]
        )
        for m in s.modes:
            mode.add_metric([m], 1.0 if m == s.effective_mode else 0.0)
        yield mode
        yield GaugeMetricFamily(
            "kvfabric_scheduling_efficiency",
            "Share of the last window's judged transfers on the offline-best path",
            value=s.efficiency_last if s.efficiency_last is not None else math.nan,
        )
        tiers = GaugeMetricFamily(
            "kvfabric_tier_utilisation",
            "Smoothed utilisation of a tier's ports, mean and p95",
            labels=["tier", "stat"],
        )
        for tier, (mean, p95) in sorted(s.tiers.items()):
            tiers.add_metric([tier, "mean"], mean)
            tiers.add_metric([tier, "p95"], p95)
        yield tiers
        stale = GaugeMetricFamily(
            "kvfabric_telemetry_staleness_seconds",
            "Age of each switch's last telemetry sample (+Inf before the first)",
            labels=["switch"],
        )
        for switch, age in sorted(s.staleness_s.items()):
            stale.add_metric([switch], age if age is not None else math.inf)
        yield stale
        active = GaugeMetricFamily(
            "kvfabric_alert_active", "1 for each alert firing now",
            labels=["name", "subject", "severity"],
        )  # fmt: skip
        for name, subject, severity in s.alerts:
            active.add_metric([name, subject, severity], 1.0)
        yield active
        links = GaugeMetricFamily(
            "kvfabric_link_up", "1 while the audit finds a cable up", labels=["link", "status"]
        )
        for link, status in s.links:
            links.add_metric([link, status], 1.0 if status == "up" else 0.0)
        yield links
        yield from _port_families(s)
        yield GaugeMetricFamily(
            "kvfabric_pins", "Transfers in flight pinned on a spine by their tag's range",
            value=s.pins,
        )  # fmt: skip
        yield _gauge_of(
            "kvfabric_flow_pins",
            "Flow pins of flows, on their spine (pinned) or, with no live spine, on ECMP",
            "placement",
            s.flow_pins,
        )
        yield _gauge_of(
            "kvfabric_static_pins",
            "Deprecated, removed in the next release: the old name of kvfabric_flow_pins",
            "placement",
            s.flow_pins,
        )
        yield GaugeMetricFamily(
            "kvfabric_transfers_in_flight", "Transfers not yet completed", value=s.in_flight
        )
        yield _gauge_of(
            "kvfabric_transfers_held",
            "Transfers held behind others, by path (a path with none has no series)",
            "path",
            s.held,
        )


def _port_families(s: Scrape) -> Iterator[Metric]:
    """The ports' capacities, reported speeds and statuses, and the unmodelled ports."""
    capacity = GaugeMetricFamily(
        "kvfabric_port_capacity_bps",
        "Each egress port's capacity in the model now: the fabric file's until its switch "
        "reports another speed",
        labels=["port"],
    )
    file = GaugeMetricFamily(
        "kvfabric_port_file_capacity_bps",
        "Each egress port's capacity in the fabric file",
        labels=["port"],
    )
    speed = GaugeMetricFamily(
        "kvfabric_port_speed_bps",
        "The speed each port's switch reports (gNMI port-speed; no series while unknown)",
        labels=["port"],
    )
    oper = GaugeMetricFamily(
        "kvfabric_port_oper_up",
        "1 while a port's switch reports its oper-status UP, else 0 (no series before a report)",
        labels=["port"],
    )
    for p in s.ports:
        capacity.add_metric([p.port], p.capacity_bps)
        file.add_metric([p.port], p.file_capacity_bps)
        if p.speed_bps is not None:
            speed.add_metric([p.port], p.speed_bps)
        if p.up is not None:
            oper.add_metric([p.port], 1.0 if p.up else 0.0)
    unmodelled = GaugeMetricFamily(
        "kvfabric_port_unmodelled",
        "1 for each port a switch reports up that the fabric file does not know",
        labels=["port"],
    )
    for port in s.unmodelled:
        unmodelled.add_metric([port], 1.0)
    yield from (capacity, file, speed, oper, unmodelled)


def _gauge_of(name: str, help_text: str, label: str, values: Mapping[str, int]) -> Metric:
    """A gauge with one series per key of ``values`` (its one label), in key order."""
    gauge = GaugeMetricFamily(name, help_text, labels=[label])
    for key, value in sorted(values.items()):
        gauge.add_metric([key], value)
    return gauge
