"""The fabric file's grammar: one ``_parse_<section>`` function per section.

Each function checks the section's shape (its keys, the types and ranges of its
values) and returns frozen dataclasses together with the nodes they came from, so
that the cross-reference checks of :mod:`controller.config.checks` can still point at
the line of the offending key.
"""

from __future__ import annotations

import re
from pathlib import Path

from controller.config import located
from controller.config.checks import Placed, check_fabric
from controller.config.located import Node, compose
from controller.config.model import (
    MAX_PORT,
    MAX_WAIT_LIMIT_S,
    AlertSettings,
    ApiSettings,
    ControllerSettings,
    FabricConfig,
    HostConfig,
    KvClassSettings,
    LinkConfig,
    LinkEnd,
    Mode,
    Policy,
    Pool,
    Role,
    SafetySettings,
    SchedulingSettings,
    SelectionSettings,
    SwitchConfig,
    TelemetrySettings,
    TlsSettings,
)
from controller.config.units import format_duration

_TAG_PORTS = re.compile(r"^\s*(\d+)\s*-\s*(\d+)\s*$")
_UINT64_MAX = 2**64 - 1
_UINT128_MAX = 2**128 - 1


def parse_document(text: str, file: str, base_dir: Path) -> FabricConfig:
    """The validated fabric of one YAML document."""
    root = compose(file, text)
    if root.raw is None:
        raise root.error("the file is empty; expected the keys 'switches' and 'links'")
    top = root.fields(["switches", "links"], ["name", "hosts", "controller"])
    name = located.name(top["name"]) if "name" in top else Path(file).stem
    switches = [_parse_switch(n) for n in top["switches"].items()]
    hosts = [_parse_host(n) for n in top["hosts"].items()] if "hosts" in top else []
    links = [_parse_link(n) for n in top["links"].items()]
    controller = (
        _parse_controller(top["controller"], base_dir)
        if "controller" in top
        else ControllerSettings()
    )
    checked_hosts = check_fabric(switches, hosts, links, top["switches"], top["links"])
    return FabricConfig(
        name=name,
        switches=tuple(s.value for s in switches),
        hosts=checked_hosts,
        links=tuple(link.value for link in links),
        controller=controller,
        source=file,
    )


# -- switches: [{name, role, p4runtime, device_id, election_id?, subnet?}] ------------


def _parse_switch(node: Node) -> Placed[SwitchConfig]:
    f = node.fields(["name", "role", "p4runtime", "device_id"], ["election_id", "subnet"])
    host, port = located.address(f["p4runtime"])
    switch = SwitchConfig(
        name=located.name(f["name"]),
        role=located.choice(f["role"], Role),
        p4runtime=f"{host}:{port}",
        device_id=located.integer(f["device_id"], 0, _UINT64_MAX),
        election_id=located.integer(f["election_id"], 1, _UINT128_MAX)
        if "election_id" in f
        else None,
        subnet=located.ipv4_network(f["subnet"]) if "subnet" in f else None,
    )
    if switch.subnet is not None and switch.role is Role.SPINE:
        raise f["subnet"].error("only leaves have a subnet (the prefix of their hosts)")
    return Placed(switch, node, f)


# -- hosts: [{name, leaf, port, ipv4, mac, pool, capacity?}] ---------------------------


def _parse_host(node: Node) -> Placed[HostConfig]:
    f = node.fields(["name", "leaf", "port", "ipv4", "mac"], ["pool", "capacity"])
    iface = located.ipv4_interface(f["ipv4"])
    host = HostConfig(
        name=located.name(f["name"]),
        leaf=located.name(f["leaf"]),
        port=located.integer(f["port"], 1, MAX_PORT),
        ipv4=iface.ip,
        prefix_len=iface.network.prefixlen,
        mac=located.mac(f["mac"]),
        pool=located.choice(f["pool"], Pool) if "pool" in f else Pool.OTHER,
        capacity_bps=located.capacity(f["capacity"]) if "capacity" in f else 0,
    )
    return Placed(host, node, f)


# -- links: [{a: {switch, port}, b: {switch, port}, capacity}] ------------------------


def _parse_link(node: Node) -> Placed[LinkConfig]:
    f = node.fields(["a", "b", "capacity"])
    ends: dict[str, Node] = dict(f)
    parsed: list[LinkEnd] = []
    for side in ("a", "b"):
        end = f[side].fields(["switch", "port"])
        parsed.append(
            LinkEnd(located.name(end["switch"]), located.integer(end["port"], 1, MAX_PORT))
        )
        ends[f"{side}.switch"] = end["switch"]
        ends[f"{side}.port"] = end["port"]
    link = LinkConfig(parsed[0], parsed[1], located.capacity(f["capacity"]))
    return Placed(link, node, ends)


# -- controller: {mode, telemetry, selection, safety, kv_class, api, scheduling, ...} ------------


def _parse_controller(node: Node, base_dir: Path) -> ControllerSettings:
    f = node.fields(
        [],
        [
            "mode",
            "telemetry",
            "selection",
            "safety",
            "kv_class",
            "api",
            "p4runtime_tls",
            "alerts",
            "scheduling",
            "audit_interval",
            "audit_hold",
            "audit_misses",
            "flowlet_timeout",
        ],
    )
    d = ControllerSettings()
    return ControllerSettings(
        mode=located.choice(f["mode"], Mode) if "mode" in f else d.mode,
        telemetry=_parse_telemetry(f["telemetry"]) if "telemetry" in f else d.telemetry,
        selection=_parse_selection(f["selection"]) if "selection" in f else d.selection,
        safety=_parse_safety(f["safety"]) if "safety" in f else d.safety,
        kv_class=_parse_kv_class(f["kv_class"]) if "kv_class" in f else d.kv_class,
        api=_parse_api(f["api"], base_dir) if "api" in f else d.api,
        p4runtime_tls=_parse_tls(f["p4runtime_tls"], base_dir) if "p4runtime_tls" in f else None,
        alerts=_parse_alerts(f["alerts"]) if "alerts" in f else d.alerts,
        scheduling=_parse_scheduling(f["scheduling"]) if "scheduling" in f else d.scheduling,
        audit_interval_s=(
            located.duration(f["audit_interval"], 0.001, 3600.0)
            if "audit_interval" in f
            else d.audit_interval_s
        ),
        audit_hold_s=(
            located.duration(f["audit_hold"], 0.0, 3600.0) if "audit_hold" in f else d.audit_hold_s
        ),
        audit_misses=(
            located.integer(f["audit_misses"], 1, 1000) if "audit_misses" in f else d.audit_misses
        ),
        flowlet_timeout_s=(
            located.duration(f["flowlet_timeout"], 1e-6, 10.0)
            if "flowlet_timeout" in f
            else d.flowlet_timeout_s
        ),
    )


def _parse_telemetry(node: Node) -> TelemetrySettings:
    f = node.fields([], ["poll_interval", "staleness_limit", "smoothing"])
    d = TelemetrySettings()
    poll = (
        located.duration(f["poll_interval"], 0.001, 60.0)
        if "poll_interval" in f
        else d.poll_interval_s
    )
    stale = (
        located.duration(f["staleness_limit"], 0.001, 3600.0)
        if "staleness_limit" in f
        else d.staleness_limit_s
    )
    if stale < poll:
        where = f.get("staleness_limit") or f["poll_interval"]
        raise where.error(
            f"the staleness limit ({stale * 1e3:g}ms) must be at least the poll interval "
            f"({poll * 1e3:g}ms), or every switch would always be stale"
        )
    smoothing = located.duration(f["smoothing"], 0.0, 600.0) if "smoothing" in f else d.smoothing_s
    return TelemetrySettings(poll, stale, smoothing)


def _parse_selection(node: Node) -> SelectionSettings:
    keys = ["hysteresis", "util_delta", "latency_factor", "max_cost_ratio", "inflight_accounting"]
    f = node.fields([], keys)
    d = SelectionSettings()
    ratio = located.number(f["max_cost_ratio"], 1.0, 1000.0) if "max_cost_ratio" in f else None
    return SelectionSettings(
        hysteresis=located.fraction(f["hysteresis"], 0.0, 1.0)
        if "hysteresis" in f
        else d.hysteresis,
        util_delta=located.fraction(f["util_delta"], 0.0, 1.0)
        if "util_delta" in f
        else d.util_delta,
        latency_factor=(
            located.number(f["latency_factor"], 1.0, 100.0)
            if "latency_factor" in f
            else d.latency_factor
        ),
        max_cost_ratio=ratio if ratio is not None else d.max_cost_ratio,
        inflight_accounting=(
            located.boolean(f["inflight_accounting"])
            if "inflight_accounting" in f
            else d.inflight_accounting
        ),
    )


def _parse_safety(node: Node) -> SafetySettings:
    keys = [
        "slow_factor",
        "baseline_window",
        "baseline_min_samples",
        "reroute_limit",
        "reroute_window",
        "quiet_period",
        "transfer_timeout",
        "timeout_factor",
        "transfer_timeout_max",
    ]
    f = node.fields([], keys)
    d = SafetySettings()
    timeout = (
        located.duration(f["transfer_timeout"], 0.001, 86400.0)
        if "transfer_timeout" in f
        else d.transfer_timeout_s
    )
    timeout_max = (
        located.duration(f["transfer_timeout_max"], 0.001, 86400.0)
        if "transfer_timeout_max" in f
        else max(d.transfer_timeout_max_s, timeout)
    )
    if timeout_max < timeout:
        raise f["transfer_timeout_max"].error(
            f"the longest transfer timeout ({format_duration(timeout_max)}) must be at least "
            f"transfer_timeout ({format_duration(timeout)})"
        )
    window = located.integer(f["baseline_window"], 1, 10_000) if "baseline_window" in f else None
    min_samples = (
        located.integer(f["baseline_min_samples"], 1, 10_000)
        if "baseline_min_samples" in f
        else None
    )
    window = window or d.baseline_window
    min_samples = min_samples or min(d.baseline_min_samples, window)
    if min_samples > window:
        raise f["baseline_min_samples"].error(
            f"expected at most baseline_window ({window}), got {min_samples}"
        )
    return SafetySettings(
        slow_factor=located.number(f["slow_factor"], 1.0, 100.0)
        if "slow_factor" in f
        else d.slow_factor,
        baseline_window=window,
        baseline_min_samples=min_samples,
        reroute_limit=(
            located.integer(f["reroute_limit"], 0, 1_000_000)
            if "reroute_limit" in f
            else d.reroute_limit
        ),
        reroute_window_s=(
            located.duration(f["reroute_window"], 0.001, 86400.0)
            if "reroute_window" in f
            else d.reroute_window_s
        ),
        quiet_period_s=(
            located.duration(f["quiet_period"], 0.0, 7 * 86400.0)
            if "quiet_period" in f
            else d.quiet_period_s
        ),
        transfer_timeout_s=timeout,
        timeout_factor=(
            located.number(f["timeout_factor"], 1.0, 1000.0)
            if "timeout_factor" in f
            else d.timeout_factor
        ),
        transfer_timeout_max_s=timeout_max,
    )


def _parse_kv_class(node: Node) -> KvClassSettings:
    f = node.fields([], ["dscp", "tag_ports"])
    d = KvClassSettings()
    dscp = located.integer(f["dscp"], 1, 63) if "dscp" in f else d.dscp
    first, last = d.tag_port_first, d.tag_port_last
    if "tag_ports" in f:
        text = f["tag_ports"].text("a port range such as '40000-40999'")
        m = _TAG_PORTS.match(text)
        if m is None:
            raise f["tag_ports"].error(f"expected a port range such as '40000-40999', got {text!r}")
        first, last = int(m.group(1)), int(m.group(2))
        if not 1024 <= first <= last <= 65535:
            raise f["tag_ports"].error(
                f"expected a range FIRST-LAST with 1024 <= FIRST <= LAST <= 65535, got {text!r}"
            )
    return KvClassSettings(dscp, first, last)


def _parse_api(node: Node, base_dir: Path) -> ApiSettings:
    f = node.fields([], ["bind", "token", "token_file"])
    located.one_of_keys(node, f, ["token", "token_file"])
    d = ApiSettings()
    host, port = (
        located.address(f["bind"], allow_port_zero=True) if "bind" in f else (d.host, d.port)
    )
    token: str | None = None
    if "token" in f:
        token = located.string(f["token"])
    elif "token_file" in f:
        path = _existing_file(f["token_file"], base_dir)
        try:
            token = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise f["token_file"].error(f"cannot read {str(path)!r}: {exc}") from None
    if token is not None and (not token or any(c.isspace() for c in token)):
        where = f.get("token") or f["token_file"]
        raise where.error("a bearer token must be non-empty and contain no whitespace")
    return ApiSettings(host, port, token)


def _parse_tls(node: Node, base_dir: Path) -> TlsSettings:
    f = node.fields(["ca_cert"], ["cert", "key"])
    if ("cert" in f) != ("key" in f):
        given, missing = ("cert", "key") if "cert" in f else ("key", "cert")
        raise f[given].error(f"a client {given!r} needs its {missing!r} too")
    return TlsSettings(
        ca_cert=_existing_file(f["ca_cert"], base_dir),
        cert=_existing_file(f["cert"], base_dir) if "cert" in f else None,
        key=_existing_file(f["key"], base_dir) if "key" in f else None,
    )


def _parse_alerts(node: Node) -> AlertSettings:
    keys = [
        "window",
        "p99_limit",
        "p99_rise",
        "median_window",
        "efficiency_min",
        "efficiency_windows",
        "efficiency_tolerance",
        "tier_mean_max",
        "tier_p95_max",
    ]
    f = node.fields([], keys)
    d = AlertSettings()
    settings = AlertSettings(
        window_s=located.duration(f["window"], 1.0, 86400.0) if "window" in f else d.window_s,
        p99_limit_s=located.duration(f["p99_limit"], 1e-6, 3600.0)
        if "p99_limit" in f
        else d.p99_limit_s,
        p99_rise=located.fraction(f["p99_rise"], 0.0, 10.0) if "p99_rise" in f else d.p99_rise,
        median_window_s=(
            located.duration(f["median_window"], 60.0, 365 * 86400.0)
            if "median_window" in f
            else d.median_window_s
        ),
        efficiency_min=(
            located.fraction(f["efficiency_min"]) if "efficiency_min" in f else d.efficiency_min
        ),
        efficiency_windows=(
            located.integer(f["efficiency_windows"], 1, 1000)
            if "efficiency_windows" in f
            else d.efficiency_windows
        ),
        efficiency_tolerance=(
            located.fraction(f["efficiency_tolerance"])
            if "efficiency_tolerance" in f
            else d.efficiency_tolerance
        ),
        tier_mean_max=located.fraction(f["tier_mean_max"])
        if "tier_mean_max" in f
        else d.tier_mean_max,
        tier_p95_max=located.fraction(f["tier_p95_max"]) if "tier_p95_max" in f else d.tier_p95_max,
    )
    if settings.median_window_s < settings.window_s:
        where = f.get("median_window") or f["window"]
        raise where.error("the median window must be at least one alert window long")
    return settings


def _parse_scheduling(node: Node) -> SchedulingSettings:
    f = node.fields([], ["policy", "max_wait"])
    d = SchedulingSettings()
    return SchedulingSettings(
        policy=located.choice(f["policy"], Policy) if "policy" in f else d.policy,
        max_wait_s=(
            located.duration(f["max_wait"], 0.0, MAX_WAIT_LIMIT_S)
            if "max_wait" in f
            else d.max_wait_s
        ),
    )


def _existing_file(node: Node, base_dir: Path) -> Path:
    text = node.text("a file path")
    path = Path(text)
    if not path.is_absolute():
        path = base_dir / path
    if not path.is_file():
        raise node.error(f"no such file: {str(path)!r}")
    return path


def parse_controller_settings(node: Node, base_dir: Path) -> ControllerSettings:
    """The ``controller`` section of a fabric file, wherever else it is written."""
    return _parse_controller(node, base_dir)
