"""The fabric file's grammar: one ``_parse_<section>`` function per section.

Each function checks the section's shape (its keys, the types and ranges of its
values) and returns frozen dataclasses together with the nodes they came from, so
that the cross-reference checks of :mod:`controller.config.checks` can still point at
the line of the offending key.
"""

from __future__ import annotations

import re
from pathlib import Path

from controller.config import located, model
from controller.config.checks import Placed, check_fabric
from controller.config.located import Node, compose
from controller.config.units import format_duration

_TAG_PORTS = re.compile(r"^\s*(\d+)\s*-\s*(\d+)\s*$")
_UINT64_MAX = 2**64 - 1
_UINT128_MAX = 2**128 - 1


def parse_document(text: str, file: str, base_dir: Path) -> model.FabricConfig:
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
        else model.ControllerSettings()
    )
    checked_hosts = check_fabric(switches, hosts, links, top["switches"], top["links"])
    _check_tag_ranges(controller.kv_class, switches, top)
    return model.FabricConfig(
        name=name,
        switches=tuple(s.value for s in switches),
        hosts=checked_hosts,
        links=tuple(link.value for link in links),
        controller=controller,
        source=file,
    )


# -- switches: [{name, role, p4runtime, device_id, election_id?, subnet?}] ------------


def _parse_switch(node: Node) -> Placed[model.SwitchConfig]:
    f = node.fields(["name", "role", "p4runtime", "device_id"], ["election_id", "subnet"])
    host, port = located.address(f["p4runtime"])
    switch = model.SwitchConfig(
        name=located.name(f["name"]),
        role=located.choice(f["role"], model.Role),
        p4runtime=f"{host}:{port}",
        device_id=located.integer(f["device_id"], 0, _UINT64_MAX),
        election_id=located.optional(f, "election_id", None, located.integer, 1, _UINT128_MAX),
        subnet=located.optional(f, "subnet", None, located.ipv4_network),
    )
    if switch.role is model.Role.SUPERSPINE:
        raise f["role"].error(
            "the controller drives leaf-spine fabrics: a third tier of superspines is "
            "honoured only by `kvfabric simulate` (a scenario's fabric.pods and "
            "fabric.superspines)"
        )
    if switch.subnet is not None and switch.role is model.Role.SPINE:
        raise f["subnet"].error("only leaves have a subnet (the prefix of their hosts)")
    return Placed(switch, node, f)


# -- hosts: [{name, leaf, port, ipv4, mac, pool, capacity?}] ---------------------------


def _parse_host(node: Node) -> Placed[model.HostConfig]:
    f = node.fields(["name", "leaf", "port", "ipv4", "mac"], ["pool", "capacity"])
    iface = located.ipv4_interface(f["ipv4"])
    host = model.HostConfig(
        name=located.name(f["name"]),
        leaf=located.name(f["leaf"]),
        port=located.integer(f["port"], 1, model.MAX_PORT),
        ipv4=iface.ip,
        prefix_len=iface.network.prefixlen,
        mac=located.mac(f["mac"]),
        pool=located.optional(f, "pool", model.Pool.OTHER, located.choice, model.Pool),
        capacity_bps=located.optional(f, "capacity", 0, located.capacity),
    )
    return Placed(host, node, f)


# -- links: [{a: {switch, port}, b: {switch, port}, capacity}] ------------------------


def _parse_link(node: Node) -> Placed[model.LinkConfig]:
    f = node.fields(["a", "b", "capacity"])
    ends: dict[str, Node] = dict(f)
    parsed: list[model.LinkEnd] = []
    for side in ("a", "b"):
        end = f[side].fields(["switch", "port"])
        parsed.append(
            model.LinkEnd(
                located.name(end["switch"]), located.integer(end["port"], 1, model.MAX_PORT)
            )
        )
        ends[f"{side}.switch"] = end["switch"]
        ends[f"{side}.port"] = end["port"]
    link = model.LinkConfig(parsed[0], parsed[1], located.capacity(f["capacity"]))
    return Placed(link, node, ends)


# -- controller: {mode, telemetry, selection, safety, kv_class, api, scheduling, ...} ------------


def _parse_controller(node: Node, base_dir: Path) -> model.ControllerSettings:
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
    d = model.ControllerSettings()
    return model.ControllerSettings(
        mode=located.optional(f, "mode", d.mode, located.choice, model.Mode),
        telemetry=located.optional(f, "telemetry", d.telemetry, _parse_telemetry),
        selection=located.optional(f, "selection", d.selection, _parse_selection),
        safety=located.optional(f, "safety", d.safety, _parse_safety),
        kv_class=located.optional(f, "kv_class", d.kv_class, _parse_kv_class),
        api=located.optional(f, "api", d.api, _parse_api, base_dir),
        p4runtime_tls=located.optional(f, "p4runtime_tls", None, _parse_tls, base_dir),
        alerts=located.optional(f, "alerts", d.alerts, _parse_alerts),
        scheduling=located.optional(f, "scheduling", d.scheduling, _parse_scheduling),
        audit_interval_s=located.optional(
            f, "audit_interval", d.audit_interval_s, located.duration, 0.001, 3600.0
        ),
        audit_hold_s=located.optional(
            f, "audit_hold", d.audit_hold_s, located.duration, 0.0, 3600.0
        ),
        audit_misses=located.optional(f, "audit_misses", d.audit_misses, located.integer, 1, 1000),
        flowlet_timeout_s=located.optional(
            f, "flowlet_timeout", d.flowlet_timeout_s, located.duration, 1e-6, 10.0
        ),
    )


def _parse_telemetry(node: Node) -> model.TelemetrySettings:
    f = node.fields([], ["poll_interval", "staleness_limit", "smoothing"])
    d = model.TelemetrySettings()
    poll = located.optional(f, "poll_interval", d.poll_interval_s, located.duration, 0.001, 60.0)
    stale = located.optional(
        f, "staleness_limit", d.staleness_limit_s, located.duration, 0.001, 3600.0
    )
    if stale < poll:
        where = f.get("staleness_limit") or f["poll_interval"]
        raise where.error(
            f"the staleness limit ({stale * 1e3:g}ms) must be at least the poll interval "
            f"({poll * 1e3:g}ms), or every switch would always be stale"
        )
    smoothing = located.optional(f, "smoothing", d.smoothing_s, located.duration, 0.0, 600.0)
    return model.TelemetrySettings(poll, stale, smoothing)


def _parse_selection(node: Node) -> model.SelectionSettings:
    keys = [
        "hysteresis",
        "util_delta",
        "latency_factor",
        "max_cost_ratio",
        "inflight_accounting",
        "max_slices",
    ]
    f = node.fields([], keys)
    d = model.SelectionSettings()
    ratio = located.optional(f, "max_cost_ratio", None, located.number, 1.0, 1000.0)
    return model.SelectionSettings(
        hysteresis=located.optional(f, "hysteresis", d.hysteresis, located.fraction, 0.0, 1.0),
        util_delta=located.optional(f, "util_delta", d.util_delta, located.fraction, 0.0, 1.0),
        latency_factor=located.optional(
            f, "latency_factor", d.latency_factor, located.number, 1.0, 100.0
        ),
        max_cost_ratio=ratio if ratio is not None else d.max_cost_ratio,
        inflight_accounting=located.optional(
            f, "inflight_accounting", d.inflight_accounting, located.boolean
        ),
        max_slices=located.optional(f, "max_slices", d.max_slices, located.integer, 1, 16),
    )


def _parse_safety(node: Node) -> model.SafetySettings:
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
    d = model.SafetySettings()
    timeout = located.optional(
        f, "transfer_timeout", d.transfer_timeout_s, located.duration, 0.001, 86400.0
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
    window = located.optional(f, "baseline_window", None, located.integer, 1, 10_000)
    min_samples = located.optional(f, "baseline_min_samples", None, located.integer, 1, 10_000)
    window = window or d.baseline_window
    min_samples = min_samples or min(d.baseline_min_samples, window)
    if min_samples > window:
        raise f["baseline_min_samples"].error(
            f"expected at most baseline_window ({window}), got {min_samples}"
        )
    return model.SafetySettings(
        slow_factor=located.optional(f, "slow_factor", d.slow_factor, located.number, 1.0, 100.0),
        baseline_window=window,
        baseline_min_samples=min_samples,
        reroute_limit=located.optional(
            f, "reroute_limit", d.reroute_limit, located.integer, 0, 1_000_000
        ),
        reroute_window_s=located.optional(
            f, "reroute_window", d.reroute_window_s, located.duration, 0.001, 86400.0
        ),
        quiet_period_s=located.optional(
            f, "quiet_period", d.quiet_period_s, located.duration, 0.0, 7 * 86400.0
        ),
        transfer_timeout_s=timeout,
        timeout_factor=located.optional(
            f, "timeout_factor", d.timeout_factor, located.number, 1.0, 1000.0
        ),
        transfer_timeout_max_s=timeout_max,
    )


def _check_tag_ranges(
    kv: model.KvClassSettings, switches: list[Placed[model.SwitchConfig]], top: dict[str, Node]
) -> None:
    """Every spine needs a range of tag ports of its own (p4/README.md, Spine ranges)."""
    spines = sum(1 for s in switches if s.value.role is model.Role.SPINE)
    if kv.range_size(spines) >= 1:
        return
    node = top.get("controller")
    for key in ("kv_class", "tag_ports"):
        if node is None or not node.is_mapping:
            break
        node = dict(node.entries()).get(key, node)
    where = node if node is not None else top["switches"]
    count = kv.tag_port_last - kv.tag_port_first + 1
    raise where.error(
        f"the tag ports {kv.tag_port_first}-{kv.tag_port_last} ({count}) cannot give each of "
        f"the {spines} spines a range of its own: give at least {spines} ports"
    )


def _parse_kv_class(node: Node) -> model.KvClassSettings:
    f = node.fields([], ["dscp", "tag_ports"])
    d = model.KvClassSettings()
    dscp = located.optional(f, "dscp", d.dscp, located.integer, 1, 63)
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
    return model.KvClassSettings(dscp, first, last)


def _parse_api(node: Node, base_dir: Path) -> model.ApiSettings:
    f = node.fields([], ["bind", "token", "token_file", "coalesce_window"])
    located.one_of_keys(node, f, ["token", "token_file"])
    d = model.ApiSettings()
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
    window = located.optional(
        f, "coalesce_window", d.coalesce_window_s, located.duration, 0.0, model.COALESCE_LIMIT_S
    )
    return model.ApiSettings(host, port, token, window)


def _parse_tls(node: Node, base_dir: Path) -> model.TlsSettings:
    f = node.fields(["ca_cert"], ["cert", "key"])
    if ("cert" in f) != ("key" in f):
        given, missing = ("cert", "key") if "cert" in f else ("key", "cert")
        raise f[given].error(f"a client {given!r} needs its {missing!r} too")
    return model.TlsSettings(
        ca_cert=_existing_file(f["ca_cert"], base_dir),
        cert=located.optional(f, "cert", None, _existing_file, base_dir),
        key=located.optional(f, "key", None, _existing_file, base_dir),
    )


def _parse_alerts(node: Node) -> model.AlertSettings:
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
    d = model.AlertSettings()
    settings = model.AlertSettings(
        window_s=located.optional(f, "window", d.window_s, located.duration, 1.0, 86400.0),
        p99_limit_s=located.optional(f, "p99_limit", d.p99_limit_s, located.duration, 1e-6, 3600.0),
        p99_rise=located.optional(f, "p99_rise", d.p99_rise, located.fraction, 0.0, 10.0),
        median_window_s=located.optional(
            f, "median_window", d.median_window_s, located.duration, 60.0, 365 * 86400.0
        ),
        efficiency_min=located.optional(f, "efficiency_min", d.efficiency_min, located.fraction),
        efficiency_windows=located.optional(
            f, "efficiency_windows", d.efficiency_windows, located.integer, 1, 1000
        ),
        efficiency_tolerance=located.optional(
            f, "efficiency_tolerance", d.efficiency_tolerance, located.fraction
        ),
        tier_mean_max=located.optional(f, "tier_mean_max", d.tier_mean_max, located.fraction),
        tier_p95_max=located.optional(f, "tier_p95_max", d.tier_p95_max, located.fraction),
    )
    if settings.median_window_s < settings.window_s:
        where = f.get("median_window") or f["window"]
        raise where.error("the median window must be at least one alert window long")
    return settings


def _parse_scheduling(node: Node) -> model.SchedulingSettings:
    f = node.fields([], ["policy", "max_wait", "batch_max_wait"])
    d = model.SchedulingSettings()
    return model.SchedulingSettings(
        policy=located.optional(f, "policy", d.policy, located.choice, model.Policy),
        max_wait_s=located.optional(
            f, "max_wait", d.max_wait_s, located.duration, 0.0, model.MAX_WAIT_LIMIT_S
        ),
        batch_max_wait_s=located.optional(
            f, "batch_max_wait", None, located.duration, 0.0, model.MAX_WAIT_LIMIT_S
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


def parse_controller_settings(node: Node, base_dir: Path) -> model.ControllerSettings:
    """The ``controller`` section of a fabric file, wherever else it is written."""
    return _parse_controller(node, base_dir)
