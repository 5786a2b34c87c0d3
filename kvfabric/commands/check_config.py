"""``kvfabric check-config FILE``: validate a fabric file and summarise it.

FILE is a kvfabric YAML fabric or a p4lang/tutorials ``topology.json``. On success
the command prints what it understood (switches, hosts per pool, links, paths,
oversubscription and the controller's main settings) and exits 0; on failure it
prints the one located error (``file:line:col: key.path: message``) and exits 1.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from controller.config import FabricConfig, Policy, load_config
from controller.config.units import format_capacity, format_duration
from controller.errors import ConfigError


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the FILE argument."""
    parser.add_argument("file", metavar="FILE", help="fabric YAML, or a tutorials topology.json")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only errors")


def run(args: argparse.Namespace) -> int:
    """Validate ``args.file``: 0 and a summary, or 1 and the located error."""
    try:
        config = load_config(args.file)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if not args.quiet:
        print("\n".join(summary(config)))
    return 0


def summary(config: FabricConfig) -> list[str]:
    """Human-readable lines describing a validated fabric."""
    pools = Counter(str(h.pool) for h in config.hosts)
    pool_text = ", ".join(f"{n} {pool}" for pool, n in sorted(pools.items())) or "none"
    lines = [
        f"{config.source}: OK",
        f"fabric {config.name}: {len(config.leaves)} leaves, {len(config.spines)} spines, "
        f"{len(config.hosts)} hosts ({pool_text}), {len(config.links)} leaf-spine links",
    ]
    uplinks: dict[str, list[int]] = {}
    for link in config.links:
        for end in (link.a, link.b):
            if config.switch(end.switch).role == "leaf":
                uplinks.setdefault(end.switch, []).append(link.capacity_bps)
    for leaf in config.leaves:
        hosts = config.hosts_of(leaf.name)
        up = sum(uplinks.get(leaf.name, []))
        down = sum(h.capacity_bps for h in hosts)
        ratio = f"{down / up:.2g}:1" if up else "n/a"
        subnet = f" {leaf.subnet}" if leaf.subnet is not None else ""
        names = " ".join(h.name for h in hosts) or "-"
        lines.append(
            f"  leaf  {leaf.name:<10} {leaf.p4runtime:<22} device {leaf.device_id:<4}{subnet}  "
            f"hosts: {names}  uplinks {format_capacity(up)} (oversubscription {ratio})"
        )
    for spine in config.spines:
        lines.append(f"  spine {spine.name:<10} {spine.p4runtime:<22} device {spine.device_id}")
    lines.append(
        f"  every leaf reaches every spine: {len(config.spines)} spine paths per pair of leaves"
    )
    c = config.controller
    api = f"{c.api.host}:{c.api.port}" + (" (bearer token)" if c.api.token else " (no token)")
    tls = "on" if c.p4runtime_tls is not None else "off"
    sched = str(c.scheduling.policy)
    if c.scheduling.policy is not Policy.NONE:
        sched += f" (max wait {format_duration(c.scheduling.max_wait_s)})"
    lines.append(
        f"controller: mode {c.mode}, poll {format_duration(c.telemetry.poll_interval_s)}, "
        f"stale after {format_duration(c.telemetry.staleness_limit_s)}, "
        f"hysteresis {c.selection.hysteresis:.0%}, "
        f"reroute limit {c.safety.reroute_limit} per {format_duration(c.safety.reroute_window_s)}, "
        f"API {api}, P4Runtime TLS {tls}, KV DSCP {c.kv_class.dscp}, "
        f"tag ports {c.kv_class.tag_port_first}-{c.kv_class.tag_port_last}, "
        f"scheduling {sched}"
    )
    return lines
