"""Fabrics from parameters, and fabrics back to YAML.

``leaf_spine(spines=2, leaves=2, hosts_per_leaf=2, ...)`` builds the validated model of
a regular leaf-spine fabric, with the conventions of the shipped examples:

- switch ``leafN`` / ``spineN``; P4Runtime at ``127.0.0.1:(base_port + device_id)``,
  device ids 1.. (leaves first, then spines);
- leaf N owns ``10.0.N.0/24``; its hosts are ``hNM`` at ``10.0.N.M`` with MAC
  ``08:00:00:00:NN:MM`` on ports 1..hosts_per_leaf;
- leaf uplinks follow the hosts (port hosts_per_leaf + spine number); spine port N
  goes to leaf N;
- pools: the first ``prefill_leaves`` leaves hold prefill hosts, the others decode.

``to_yaml(config)`` writes a fabric in the file format, so that
``parse_config(to_yaml(c))`` gives back ``c``.
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network

import yaml

from controller.config.model import (
    MAX_PORT,
    ApiSettings,
    ControllerSettings,
    FabricConfig,
    HostConfig,
    LinkConfig,
    LinkEnd,
    Pool,
    Role,
    SchedulingSettings,
    SwitchConfig,
)
from controller.config.units import format_capacity, format_duration


def local_switch(
    name: str, role: Role, device_id: int, base_port: int, subnet: IPv4Network | None = None
) -> SwitchConfig:
    """A switch whose P4Runtime server listens on 127.0.0.1, port ``base_port + device_id``."""
    return SwitchConfig(
        name=name,
        role=role,
        p4runtime=f"127.0.0.1:{base_port + device_id}",
        device_id=device_id,
        subnet=subnet,
    )


def leaf_spine(
    spines: int = 2,
    leaves: int = 2,
    hosts_per_leaf: int = 2,
    *,
    link_bps: int = 20_000_000,
    host_bps: int | None = None,
    prefill_leaves: int | None = None,
    name: str | None = None,
    base_port: int = 50000,
    controller: ControllerSettings | None = None,
) -> FabricConfig:
    """A regular leaf-spine fabric (see the module docstring for its conventions)."""
    if spines < 1 or leaves < 1 or hosts_per_leaf < 0:
        raise ValueError("a fabric needs at least one spine and one leaf")
    if leaves > 254 or hosts_per_leaf > 254 or hosts_per_leaf + spines > MAX_PORT:
        raise ValueError("too many leaves, hosts or spines for the addressing plan")
    if leaves > MAX_PORT:
        raise ValueError(f"a spine has at most {MAX_PORT} ports")
    n_prefill = (leaves + 1) // 2 if prefill_leaves is None else prefill_leaves
    switches: list[SwitchConfig] = []
    hosts: list[HostConfig] = []
    links: list[LinkConfig] = []
    for li in range(1, leaves + 1):
        switches.append(
            local_switch(f"leaf{li}", Role.LEAF, li, base_port, IPv4Network(f"10.0.{li}.0/24"))
        )
        pool = Pool.PREFILL if li <= n_prefill else Pool.DECODE
        for hi in range(1, hosts_per_leaf + 1):
            hosts.append(
                HostConfig(
                    name=f"h{li}{hi}" if leaves < 10 and hosts_per_leaf < 10 else f"h{li}_{hi}",
                    leaf=f"leaf{li}",
                    port=hi,
                    ipv4=IPv4Address(f"10.0.{li}.{hi}"),
                    prefix_len=24,
                    mac=f"08:00:00:00:{li:02x}:{hi:02x}",
                    pool=pool,
                    capacity_bps=host_bps or link_bps,
                )
            )
    for si in range(1, spines + 1):
        device_id = leaves + si
        switches.append(local_switch(f"spine{si}", Role.SPINE, device_id, base_port))
        for li in range(1, leaves + 1):
            links.append(
                LinkConfig(
                    a=LinkEnd(f"leaf{li}", hosts_per_leaf + si),
                    b=LinkEnd(f"spine{si}", li),
                    capacity_bps=link_bps,
                )
            )
    return FabricConfig(
        name=name or f"leaf-spine-{spines}x{leaves}",
        switches=tuple(switches),
        hosts=tuple(hosts),
        links=tuple(links),
        controller=controller or ControllerSettings(),
        source="<generated>",
    )


def to_yaml(config: FabricConfig) -> str:
    """The fabric in the file format; the controller section lists only its defaults' changes."""
    doc: dict[str, object] = {
        "name": config.name,
        "switches": [_switch(s) for s in config.switches],
        "hosts": [_host(h) for h in config.hosts],
        "links": [
            {
                "a": {"switch": link.a.switch, "port": link.a.port},
                "b": {"switch": link.b.switch, "port": link.b.port},
                "capacity": format_capacity(link.capacity_bps),
            }
            for link in config.links
        ],
    }
    controller = _controller(config.controller)
    if controller:
        doc["controller"] = controller
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=100)


def _switch(s: SwitchConfig) -> dict[str, object]:
    out: dict[str, object] = {
        "name": s.name,
        "role": str(s.role),
        "p4runtime": s.p4runtime,
        "device_id": s.device_id,
    }
    if s.election_id is not None:
        out["election_id"] = s.election_id
    if s.subnet is not None:
        out["subnet"] = str(s.subnet)
    return out


def _host(h: HostConfig) -> dict[str, object]:
    return {
        "name": h.name,
        "leaf": h.leaf,
        "port": h.port,
        "ipv4": f"{h.ipv4}/{h.prefix_len}",
        "mac": h.mac,
        "pool": str(h.pool),
        "capacity": format_capacity(h.capacity_bps),
    }


# (section, key in the file, attribute, unit) of every scalar setting.
_SETTINGS: tuple[tuple[str, str, str, str], ...] = (
    ("telemetry", "poll_interval", "poll_interval_s", "duration"),
    ("telemetry", "staleness_limit", "staleness_limit_s", "duration"),
    ("telemetry", "smoothing", "smoothing_s", "duration"),
    ("selection", "hysteresis", "hysteresis", "percent"),
    ("selection", "util_delta", "util_delta", "percent"),
    ("selection", "latency_factor", "latency_factor", "number"),
    ("selection", "max_cost_ratio", "max_cost_ratio", "number"),
    ("selection", "inflight_accounting", "inflight_accounting", "bool"),
    ("selection", "max_slices", "max_slices", "number"),
    ("safety", "slow_factor", "slow_factor", "number"),
    ("safety", "baseline_window", "baseline_window", "number"),
    ("safety", "baseline_min_samples", "baseline_min_samples", "number"),
    ("safety", "reroute_limit", "reroute_limit", "number"),
    ("safety", "reroute_window", "reroute_window_s", "duration"),
    ("safety", "quiet_period", "quiet_period_s", "duration"),
    ("safety", "transfer_timeout", "transfer_timeout_s", "duration"),
    ("safety", "timeout_factor", "timeout_factor", "number"),
    ("safety", "transfer_timeout_max", "transfer_timeout_max_s", "duration"),
    ("alerts", "window", "window_s", "duration"),
    ("alerts", "p99_limit", "p99_limit_s", "duration"),
    ("alerts", "p99_rise", "p99_rise", "percent"),
    ("alerts", "median_window", "median_window_s", "duration"),
    ("alerts", "efficiency_min", "efficiency_min", "percent"),
    ("alerts", "efficiency_windows", "efficiency_windows", "number"),
    ("alerts", "efficiency_tolerance", "efficiency_tolerance", "percent"),
    ("alerts", "tier_mean_max", "tier_mean_max", "percent"),
    ("alerts", "tier_p95_max", "tier_p95_max", "percent"),
    ("scheduling", "max_wait", "max_wait_s", "duration"),
)


def _scheduling(c: SchedulingSettings, d: SchedulingSettings) -> dict[str, object]:
    """The scheduling keys that differ from the defaults (``max_wait`` goes with the
    other durations of :data:`_SETTINGS`)."""
    out: dict[str, object] = {}
    if c.policy != d.policy:
        out["policy"] = str(c.policy)
    if c.batch_max_wait_s is not None:
        out["batch_max_wait"] = format_duration(c.batch_max_wait_s)
    return out


def _api(c: ApiSettings, d: ApiSettings) -> dict[str, object]:
    """The API keys that differ from the defaults."""
    out: dict[str, object] = {}
    if (c.host, c.port) != (d.host, d.port):
        out["bind"] = f"{c.host}:{c.port}"
    if c.token is not None:
        out["token"] = c.token
    if c.coalesce_window_s:
        out["coalesce_window"] = format_duration(c.coalesce_window_s)
    return out


def _controller(c: ControllerSettings) -> dict[str, object]:
    """The settings that differ from the defaults, in the file's units."""
    d = ControllerSettings()
    out: dict[str, object] = {}
    if c.mode != d.mode:
        out["mode"] = str(c.mode)
    scheduling = _scheduling(c.scheduling, d.scheduling)
    if scheduling:
        out["scheduling"] = scheduling
    for section, key, attr, unit in _SETTINGS:
        value, default = getattr(getattr(c, section), attr), getattr(getattr(d, section), attr)
        if value != default:
            sub = out.setdefault(section, {})
            assert isinstance(sub, dict)
            sub[key] = _unit(value, unit)
    if c.audit_interval_s != d.audit_interval_s:
        out["audit_interval"] = format_duration(c.audit_interval_s)
    if c.audit_hold_s != d.audit_hold_s:
        out["audit_hold"] = format_duration(c.audit_hold_s)
    if c.audit_misses != d.audit_misses:
        out["audit_misses"] = c.audit_misses
    if c.flowlet_timeout_s != d.flowlet_timeout_s:
        out["flowlet_timeout"] = format_duration(c.flowlet_timeout_s)
    if c.kv_class != d.kv_class:
        out["kv_class"] = {
            "dscp": c.kv_class.dscp,
            "tag_ports": f"{c.kv_class.tag_port_first}-{c.kv_class.tag_port_last}",
        }
    api = _api(c.api, d.api)
    if api:
        out["api"] = api
    if c.p4runtime_tls is not None:
        tls: dict[str, object] = {"ca_cert": str(c.p4runtime_tls.ca_cert)}
        if c.p4runtime_tls.cert is not None and c.p4runtime_tls.key is not None:
            tls["cert"] = str(c.p4runtime_tls.cert)
            tls["key"] = str(c.p4runtime_tls.key)
        out["p4runtime_tls"] = tls
    return out


def _unit(value: float | bool | None, unit: str) -> object:
    if value is None:
        return None
    if unit == "duration":
        return format_duration(value)
    if unit == "percent":
        return f"{value * 100:g}%"
    return value
