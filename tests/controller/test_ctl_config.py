"""The fabric file: valid files, exact located errors for bad ones, units, the
tutorials import, generated fabrics and ``kvfabric check-config``."""

from __future__ import annotations

import subprocess
import sys
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path

import pytest

from controller.config import (
    FabricConfig,
    LinkEnd,
    Mode,
    Policy,
    Pool,
    Role,
    SchedulingSettings,
    load_config,
    parse_config,
)
from controller.config.generate import leaf_spine, to_yaml
from controller.config.tutorials import parse_tutorials_topology
from controller.config.units import (
    UnitError,
    format_capacity,
    format_duration,
    parse_capacity,
    parse_duration,
    parse_fraction,
)
from controller.errors import ConfigError
from kvfabric.cli import main

ROOT = Path(__file__).resolve().parents[2]
TOPOLOGIES = ROOT / "topologies"
SHIPPED = sorted(TOPOLOGIES.glob("*.yaml"))

BASE = """\
name: t
switches:
  - {name: leaf1, role: leaf, p4runtime: "127.0.0.1:50001", device_id: 1, subnet: 10.0.1.0/24}
  - {name: leaf2, role: leaf, p4runtime: "127.0.0.1:50002", device_id: 2}
  - {name: spine1, role: spine, p4runtime: "127.0.0.1:50003", device_id: 3}
  - {name: spine2, role: spine, p4runtime: "127.0.0.1:50004", device_id: 4}
hosts:
  - {name: h1, leaf: leaf1, port: 1, ipv4: 10.0.1.1/24, mac: "08:00:00:00:01:01", pool: prefill}
  - {name: h2, leaf: leaf2, port: 1, ipv4: 10.0.2.1/24, mac: "08:00:00:00:02:01", pool: decode}
links:
  - {a: {switch: leaf1, port: 3}, b: {switch: spine1, port: 1}, capacity: 20Mbps}
  - {a: {switch: leaf2, port: 3}, b: {switch: spine1, port: 2}, capacity: 20Mbps}
  - {a: {switch: leaf1, port: 4}, b: {switch: spine2, port: 1}, capacity: 400Gbps}
  - {a: {switch: leaf2, port: 4}, b: {switch: spine2, port: 2}, capacity: 20Mbps}
"""


def test_base_file_loads_into_frozen_dataclasses() -> None:
    cfg = parse_config(BASE, "fabric.yaml")
    assert cfg.name == "t" and cfg.source == "fabric.yaml"
    assert [s.role for s in cfg.switches] == [Role.LEAF, Role.LEAF, Role.SPINE, Role.SPINE]
    assert cfg.switches[0].subnet == IPv4Network("10.0.1.0/24")
    h1 = cfg.host("h1")
    assert (h1.leaf, h1.port, h1.ipv4, h1.prefix_len) == ("leaf1", 1, IPv4Address("10.0.1.1"), 24)
    assert h1.pool is Pool.PREFILL
    assert h1.capacity_bps == 400_000_000_000  # no capacity: its leaf's fastest uplink
    assert cfg.links[2].capacity_bps == 400_000_000_000
    assert cfg.links[0].a == LinkEnd("leaf1", 3)
    assert cfg.controller.mode is Mode.KV_AWARE
    assert cfg.controller.telemetry.poll_interval_s == 0.1
    with pytest.raises(AttributeError):
        cfg.name = "x"  # type: ignore[misc]
    with pytest.raises(KeyError, match="did you mean 'spine1'"):
        cfg.switch("spine11")


@pytest.mark.parametrize("path", SHIPPED)
def test_shipped_topologies_are_valid(path: Path) -> None:
    cfg = load_config(path)
    assert cfg.leaves and cfg.spines and cfg.hosts


def test_lab_controller_section_reads_every_key() -> None:
    c = load_config(TOPOLOGIES / "lab-2x2.yaml").controller
    assert c.safety.transfer_timeout_s == 60.0
    assert c.safety.reroute_window_s == 60.0 and c.safety.quiet_period_s == 300.0
    assert c.alerts.median_window_s == 7 * 86400.0
    assert c.kv_class.tag_port_first == 40000
    assert (c.api.host, c.api.port, c.api.token) == ("127.0.0.1", 8080, None)


# -- errors in one section -----------------------------------------------------------------

BAD = [
    (
        "port: 2}, capacity: 20Mbps}\n",
        'port: "x"}, capacity: 20Mbps}\n',
        "fabric.yaml:12:61: links[1].b.port: expected an integer 1..510, got 'x'",
    ),
    (
        "{switch: leaf1, port: 3}",
        "{switch: leaf1, port: 600}",
        "fabric.yaml:11:31: links[0].a.port: expected an integer 1..510, got 600",
    ),
    (
        'role: spine, p4runtime: "127.0.0.1:50004"',
        'rol: spine, p4runtime: "127.0.0.1:50004"',
        "fabric.yaml:6:20: switches[3].rol: unknown key; did you mean 'role'? "
        "(expected one of name, role, p4runtime, device_id, election_id, subnet)",
    ),
    (
        "name: t\n",
        "name: t\nswitchs: []\n",
        "fabric.yaml:2:1: switchs: unknown key; did you mean 'switches'? "
        "(expected one of switches, links, name, hosts, controller)",
    ),
    (
        "pool: decode",
        "pool: decod",
        "fabric.yaml:9:89: hosts[1].pool: expected one of prefill, decode, other, "
        "got 'decod'; did you mean 'decode'?",
    ),
    (
        "{name: h1, leaf: leaf1, port: 1, ",
        "{name: h1, port: 1, ",
        "fabric.yaml:8:5: hosts[0]: missing required key 'leaf'",
    ),
    (
        ", capacity: 20Mbps}\n  - {a: {switch: leaf2, port: 3}",
        ", capacity: 20MB}\n  - {a: {switch: leaf2, port: 3}",
        "fabric.yaml:11:75: links[0].capacity: capacities are in bits per second ('Mbps'), "
        "not bytes ('MB'), got '20MB'",
    ),
    (
        ", capacity: 20Mbps}\n  - {a: {switch: leaf2, port: 3}",
        ", capacity: fast}\n  - {a: {switch: leaf2, port: 3}",
        "fabric.yaml:11:75: links[0].capacity: expected a capacity such as '20Mbps' or "
        "'400Gbps', got 'fast'",
    ),
    (
        '"08:00:00:00:02:01"',
        '"08:00:00:00:02"',
        "fabric.yaml:9:62: hosts[1].mac: expected a MAC address such as "
        "'08:00:00:00:01:11', got '08:00:00:00:02'",
    ),
    (
        '"08:00:00:00:02:01"',
        '"01:00:00:00:02:01"',
        "fabric.yaml:9:62: hosts[1].mac: expected a unicast MAC address (first octet even), "
        "got '01:00:00:00:02:01'",
    ),
    (
        "ipv4: 10.0.2.1/24",
        "ipv4: 10.0.2.300",
        "fabric.yaml:9:44: hosts[1].ipv4: expected an IPv4 address such as '10.0.1.1' or "
        "'10.0.1.1/24', got '10.0.2.300'",
    ),
    (
        '"127.0.0.1:50004"',
        '"127.0.0.1"',
        "fabric.yaml:6:44: switches[3].p4runtime: expected an address host:port such as "
        "'127.0.0.1:9559', got '127.0.0.1'",
    ),
    (
        "device_id: 4}",
        "device_id: -4}",
        "fabric.yaml:6:74: switches[3].device_id: expected an integer "
        "0..18446744073709551615, got -4",
    ),
    (
        'role: spine, p4runtime: "127.0.0.1:50004", device_id: 4}',
        'role: spine, p4runtime: "127.0.0.1:50004", device_id: 4, subnet: 10.0.9.0/24}',
        "fabric.yaml:6:85: switches[3].subnet: only leaves have a subnet "
        "(the prefix of their hosts)",
    ),
    ("name: t\n", "name: [t\n", "fabric.yaml:2:9: invalid YAML: expected ',' or ']', but got ':'"),
    (
        "name: t\n",
        "name: t\nname: u\n",
        "fabric.yaml:2:1: duplicate key 'name' (first given on line 1)",
    ),
]

# -- errors across sections ----------------------------------------------------------------

CROSS = [
    (
        "leaf: leaf2, port: 1",
        "leaf: leaf3, port: 1",
        "fabric.yaml:9:22: hosts[1].leaf: no switch named 'leaf3'; did you mean 'leaf2'?",
    ),
    (
        "leaf: leaf2, port: 1",
        "leaf: spine2, port: 1",
        "fabric.yaml:9:22: hosts[1].leaf: 'spine2' is a spine; hosts attach to leaves",
    ),
    (
        "ipv4: 10.0.2.1/24",
        "ipv4: 10.0.1.1/24",
        "fabric.yaml:9:44: hosts[1].ipv4: 10.0.1.1 is already used by hosts[0] (h1)",
    ),
    (
        '"08:00:00:00:02:01"',
        '"08:00:00:00:01:01"',
        "fabric.yaml:9:62: hosts[1].mac: 08:00:00:00:01:01 is already used by hosts[0] (h1)",
    ),
    (
        "{name: h2, leaf: leaf2",
        "{name: leaf2, leaf: leaf2",
        "fabric.yaml:9:12: hosts[1].name: 'leaf2' is already the name of switches[1]",
    ),
    (
        "{name: h1, leaf: leaf1, port: 1",
        "{name: h1, leaf: leaf1, port: 3",
        "fabric.yaml:8:35: hosts[0].port: port 3 of leaf1 is already used by links[0]",
    ),
    (
        "ipv4: 10.0.1.1/24",
        "ipv4: 10.0.9.1/24",
        "fabric.yaml:8:44: hosts[0].ipv4: 10.0.9.1 is outside leaf1's subnet 10.0.1.0/24",
    ),
    (
        "  - {a: {switch: leaf2, port: 4}, b: {switch: spine2, port: 2}, capacity: 20Mbps}\n",
        "",
        "fabric.yaml:11:3: links: every leaf needs a link to every spine; missing: leaf2-spine2",
    ),
    (
        "{name: leaf2, role: leaf",
        "{name: leaf1, role: leaf",
        "fabric.yaml:4:12: switches[1].name: 'leaf1' is already the name of switches[0]",
    ),
    (
        '"127.0.0.1:50004", device_id: 4',
        '"127.0.0.1:50003", device_id: 3',
        "fabric.yaml:6:74: switches[3].device_id: device 3 at 127.0.0.1:50003 is already "
        "switches[2] (spine1)",
    ),
    (
        "b: {switch: spine2, port: 2}",
        "b: {switch: leaf1, port: 9}",
        "fabric.yaml:14:47: links[3].b.switch: links join a leaf and a spine; 'leaf2' and "
        "'leaf1' are both leaves",
    ),
    (
        "b: {switch: spine2, port: 2}",
        "b: {switch: spine3, port: 2}",
        "fabric.yaml:14:47: links[3].b.switch: no switch named 'spine3'; did you mean 'spine2'?",
    ),
    (
        "b: {switch: spine2, port: 2}",
        "b: {switch: spine2, port: 1}",
        "fabric.yaml:14:61: links[3].b.port: port 1 of spine2 is already used by links[2]",
    ),
    (
        "{a: {switch: leaf2, port: 4}, b: {switch: spine2, port: 2}",
        "{a: {switch: leaf2, port: 5}, b: {switch: spine1, port: 5}",
        "fabric.yaml:14:5: links[3]: leaf2 and spine1 are already linked by links[1]; "
        "kvfabric takes exactly one link between a leaf and a spine",
    ),
    (
        "  - {name: spine1, role: spine",
        "  - {name: spine1, role: leaf",
        "fabric.yaml:11:47: links[0].b.switch: links join a leaf and a spine; 'leaf1' and "
        "'spine1' are both leaves",
    ),
]


@pytest.mark.parametrize(("old", "new", "message"), BAD + CROSS)
def test_bad_files_name_file_line_path_and_expectation(old: str, new: str, message: str) -> None:
    assert old in BASE
    with pytest.raises(ConfigError) as exc:
        parse_config(BASE.replace(old, new, 1), "fabric.yaml")
    assert str(exc.value) == message


CONTROLLER_BAD = [
    (
        "telemetry: {poll_interval: 100}",
        "fabric.yaml:16:30: controller.telemetry.poll_interval: expected a duration such as "
        "'100ms' or '2s', got 100",
    ),
    (
        "telemetry: {poll_interval: 1s, staleness_limit: 500ms}",
        "fabric.yaml:16:51: controller.telemetry.staleness_limit: the staleness limit (500ms) "
        "must be at least the poll interval (1000ms), or every switch would always be stale",
    ),
    (
        "mode: kv_aware",
        "fabric.yaml:16:9: controller.mode: expected one of kv-aware, ecmp, flowlet, got "
        "'kv_aware'; did you mean 'kv-aware'?",
    ),
    (
        "selection: {hysteresis: 150%}",
        "fabric.yaml:16:27: controller.selection.hysteresis: expected a percentage 0%..100%, "
        "got '150%'",
    ),
    (
        "selection: {max_cost_ratio: 0.5}",
        "fabric.yaml:16:31: controller.selection.max_cost_ratio: expected a number 1..1000, "
        "got 0.5",
    ),
    (
        "selection: {inflight_accounting: no}",
        "fabric.yaml:16:36: controller.selection.inflight_accounting: expected true or "
        "false, got 'no'",
    ),
    (
        "safety: {transfer_timeout: 2m, transfer_timeout_max: 90s}",
        "fabric.yaml:16:56: controller.safety.transfer_timeout_max: the longest transfer "
        "timeout (1.5m) must be at least transfer_timeout (2m)",
    ),
    (
        "safety: {timeout_factor: 0}",
        "fabric.yaml:16:28: controller.safety.timeout_factor: expected a number 1..1000, got 0",
    ),
    (
        "kv_class: {dscp: 64}",
        "fabric.yaml:16:20: controller.kv_class.dscp: expected an integer 1..63, got 64",
    ),
    (
        "kv_class: {tag_ports: 40000-30000}",
        "fabric.yaml:16:25: controller.kv_class.tag_ports: expected a range FIRST-LAST with "
        "1024 <= FIRST <= LAST <= 65535, got '40000-30000'",
    ),
    (
        'api: {bind: "0.0.0.0:99999"}',
        "fabric.yaml:16:15: controller.api.bind: expected a TCP port 0..65535 in "
        "'0.0.0.0:99999', got 99999",
    ),
    (
        'api: {token: "a b"}',
        "fabric.yaml:16:16: controller.api.token: a bearer token must be non-empty and "
        "contain no whitespace",
    ),
    (
        "api: {token: x, token_file: y}",
        "fabric.yaml:16:31: controller.api.token_file: give only one of 'token', 'token_file'",
    ),
    (
        "p4runtime_tls: {ca_cert: /nonexistent.pem}",
        "fabric.yaml:16:28: controller.p4runtime_tls.ca_cert: no such file: '/nonexistent.pem'",
    ),
    (
        "safety: {reroute_limt: 5}",
        "fabric.yaml:16:12: controller.safety.reroute_limt: unknown key; did you mean "
        "'reroute_limit'? (expected one of slow_factor, baseline_window, baseline_min_samples, "
        "reroute_limit, reroute_window, quiet_period, transfer_timeout, timeout_factor, "
        "transfer_timeout_max)",
    ),
    (
        "safety: {baseline_window: 2, baseline_min_samples: 3}",
        "fabric.yaml:16:54: controller.safety.baseline_min_samples: expected at most "
        "baseline_window (2), got 3",
    ),
    (
        "alerts: {window: 10m, median_window: 5m}",
        "fabric.yaml:16:40: controller.alerts.median_window: the median window must be at "
        "least one alert window long",
    ),
    (
        "telemetry: 100ms",
        "fabric.yaml:16:14: controller.telemetry: expected a mapping, got '100ms'",
    ),
    (
        "scheduling: {policy: lifo}",
        "fabric.yaml:16:24: controller.scheduling.policy: expected one of none, fifo, srpt, edf, "
        "got 'lifo'; did you mean 'fifo'?",
    ),
    (
        "scheduling: {max_wait: 2m}",
        "fabric.yaml:16:26: controller.scheduling.max_wait: expected a duration between 0us and "
        "1m, got '2m'",
    ),
    (
        "scheduling: {max_wait: -1ms}",
        "fabric.yaml:16:26: controller.scheduling.max_wait: expected a duration such as '100ms' "
        "or '2s', got '-1ms'",
    ),
]


@pytest.mark.parametrize(("section", "message"), CONTROLLER_BAD)
def test_bad_controller_settings(section: str, message: str) -> None:
    with pytest.raises(ConfigError) as exc:
        parse_config(BASE + "controller:\n  " + section + "\n", "fabric.yaml")
    assert str(exc.value) == message


def test_the_cost_ratio_is_read_and_written_back() -> None:
    cfg = parse_config(BASE + "controller:\n  selection: {max_cost_ratio: 3}\n", "fabric.yaml")
    assert cfg.controller.selection.max_cost_ratio == 3.0
    assert parse_config(to_yaml(cfg), "x.yaml").controller == cfg.controller
    assert parse_config(BASE, "fabric.yaml").controller.selection.max_cost_ratio == 2.0


def test_in_flight_accounting_is_read_and_written_back() -> None:
    text = BASE + "controller:\n  selection: {inflight_accounting: false}\n"
    cfg = parse_config(text, "fabric.yaml")
    assert cfg.controller.selection.inflight_accounting is False
    assert parse_config(to_yaml(cfg), "x.yaml").controller == cfg.controller
    assert parse_config(BASE, "fabric.yaml").controller.selection.inflight_accounting is True


def test_scheduling_is_read_and_written_back() -> None:
    cfg = parse_config(
        BASE + "controller:\n  scheduling: {policy: srpt, max_wait: 20ms}\n", "f.yaml"
    )
    assert cfg.controller.scheduling == SchedulingSettings(Policy.SRPT, 0.02)
    assert parse_config(to_yaml(cfg), "x.yaml").controller == cfg.controller
    assert parse_config(BASE, "fabric.yaml").controller.scheduling == SchedulingSettings(
        Policy.NONE, 0.05
    )


def test_transfer_timeouts_are_read_and_written_back() -> None:
    safety = "  safety: {transfer_timeout: 1h, timeout_factor: 8}\n"
    cfg = parse_config(BASE + "controller:\n" + safety, "fabric.yaml")
    s = cfg.controller.safety
    assert (s.transfer_timeout_s, s.timeout_factor, s.transfer_timeout_max_s) == (3600, 8, 3600)
    assert parse_config(to_yaml(cfg), "x.yaml").controller == cfg.controller
    d = parse_config(BASE, "fabric.yaml").controller.safety
    assert (d.transfer_timeout_s, d.timeout_factor, d.transfer_timeout_max_s) == (30, 4, 600)


def test_token_and_tls_files_resolve_next_to_the_fabric_file(tmp_path: Path) -> None:
    (tmp_path / "api.token").write_text("s3cret\n")
    for name in ("ca.pem", "client.pem", "client.key"):
        (tmp_path / name).write_text("-----BEGIN-----\n")
    fabric = tmp_path / "fabric.yaml"
    fabric.write_text(
        BASE
        + "controller:\n"
        + "  api: {bind: '0.0.0.0:0', token_file: api.token}\n"
        + "  p4runtime_tls: {ca_cert: ca.pem, cert: client.pem, key: client.key}\n"
    )
    c = load_config(fabric).controller
    assert (c.api.host, c.api.port, c.api.token) == ("0.0.0.0", 0, "s3cret")
    assert c.p4runtime_tls is not None and c.p4runtime_tls.key == tmp_path / "client.key"
    assert "s3cret" not in repr(c.api)
    fabric.write_text(BASE + "controller:\n  p4runtime_tls: {ca_cert: ca.pem, cert: client.pem}\n")
    with pytest.raises(ConfigError, match=r"p4runtime_tls.cert: a client 'cert' needs its 'key'"):
        load_config(fabric)


def test_empty_and_unreadable_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    with pytest.raises(ConfigError, match="the file is empty"):
        load_config(empty)
    with pytest.raises(ConfigError, match=r"nope.yaml: cannot read the file: No such file"):
        load_config(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match=r"^x.yaml:1:1: expected a mapping, got a list$"):
        parse_config("- 1\n", "x.yaml")


# -- units ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "bps"),
    [
        ("20Mbps", 20_000_000),
        ("400Gbps", 400_000_000_000),
        ("2.5 Gb/s", 2_500_000_000),
        ("100G", 100_000_000_000),
        ("10Mbit", 10_000_000),
        ("1000", 1000),
        ("1.234567Mbps", 1_234_567),
    ],
)
def test_capacities(text: str, bps: int) -> None:
    assert parse_capacity(text) == bps


@pytest.mark.parametrize("text", ["20MB", "fast", "1.5bps", "20 Mbpss", ""])
def test_bad_capacities(text: str) -> None:
    with pytest.raises(UnitError):
        parse_capacity(text)


def test_durations_and_fractions() -> None:
    assert parse_duration("100ms") == pytest.approx(0.1)
    assert parse_duration("7d") == 7 * 86400
    assert parse_duration("500us") == pytest.approx(5e-4)
    assert parse_fraction("10%") == pytest.approx(0.1)
    assert parse_fraction("0.25") == 0.25
    for bad in ("100", "1 week"):
        with pytest.raises(UnitError, match="expected a duration"):
            parse_duration(bad)
    assert format_capacity(400_000_000_000) == "400Gbps"
    assert format_capacity(1_234_567) == "1.234567Mbps"
    assert format_duration(0.1) == "100ms" and format_duration(604800) == "7d"


# -- p4lang/tutorials topology.json --------------------------------------------------------

TUTORIALS = """{
    "hosts": {
        "h1": {"ip": "10.0.1.1/24", "mac": "08:00:00:00:01:11",
               "commands": ["route add default gw 10.0.1.10 dev eth0"]},
        "h2": {"ip": "10.0.2.2/24", "mac": "08:00:00:00:02:22"},
        "h3": {"ip": "10.0.3.3/24", "mac": "08:00:00:00:03:33"}
    },
    "switches": {
        "s1": {"runtime_json": "topo/s1-runtime.json"},
        "s2": {"runtime_json": "topo/s2-runtime.json"},
        "s3": {},
        "s4": {"program": "x.json"}
    },
    "links": [
        ["h1", "s1-p1"], ["h2", "s1-p2", "0ms", 10], ["h3", "s2-p1"],
        ["s1-p3", "s3-p1"], ["s1-p4", "s4-p2", "5ms", 20],
        ["s2-p3", "s4-p1"], ["s2-p4", "s3-p2"]
    ]
}
"""


def test_tutorials_topology_imports_with_inferred_roles() -> None:
    cfg = parse_tutorials_topology(TUTORIALS, "pod-topo/topology.json", pools={"h1": Pool.PREFILL})
    assert cfg.name == "pod-topo"
    roles = {s.name: (s.role, s.p4runtime, s.device_id) for s in cfg.switches}
    assert roles == {
        "s1": (Role.LEAF, "127.0.0.1:50051", 0),
        "s2": (Role.LEAF, "127.0.0.1:50052", 1),
        "s3": (Role.SPINE, "127.0.0.1:50053", 2),
        "s4": (Role.SPINE, "127.0.0.1:50054", 3),
    }
    h2 = cfg.host("h2")
    assert (h2.leaf, h2.port, str(h2.ipv4), h2.capacity_bps) == ("s1", 2, "10.0.2.2", 10_000_000)
    assert cfg.host("h1").pool is Pool.PREFILL and h2.pool is Pool.OTHER
    assert cfg.links[1].capacity_bps == 20_000_000
    assert cfg.links[0].capacity_bps == 20_000_000  # the default for links without a bandwidth


def test_tutorials_topology_from_a_json_file(tmp_path: Path) -> None:
    path = tmp_path / "topology.json"
    path.write_text(TUTORIALS.replace("    ", "\t"))
    assert len(load_config(path).switches) == 4


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            '["s2-p4", "s3-p2"]',
            '["s2-p4", "s3"]',
            "t.json:17:39: links[6][1]: a switch end names its port: expected 's3-pN', got 's3'",
        ),
        (
            '["h3", "s2-p1"]',
            '["h3", "s2-p1"], ["s3-p7", "s4-p7"]',
            "t.json:15:81: links[3][1]: links join a leaf and a spine; 's3' and 's4' "
            "are both spines",
        ),
        (
            '"ip": "10.0.2.2/24"',
            '"ip": "10.0.1.1/24"',
            "t.json:5:22: hosts.h2.ip: 10.0.1.1 is already used by hosts.h1 (h1)",
        ),
        (
            '["s2-p3", "s4-p1"], ',
            "",
            "t.json:14:14: links: every leaf needs a link to every spine; missing: s2-s4",
        ),
        (
            '"h3": {',
            '"h3": {"cmd": 1, ',
            "t.json:6:16: hosts.h3.cmd: unknown key (expected one of ip, mac, commands)",
        ),
        (
            "{\n",
            "{\n,",
            "t.json:2:1: invalid JSON: Expecting property name enclosed in double quotes",
        ),
    ],
)
def test_tutorials_errors_are_located_in_the_json(old: str, new: str, message: str) -> None:
    assert old in TUTORIALS
    with pytest.raises(ConfigError) as exc:
        parse_tutorials_topology(TUTORIALS.replace(old, new, 1), "t.json")
    assert str(exc.value).startswith(message)


def test_tutorials_triangle_has_no_spine() -> None:
    triangle = """{"hosts": {"h1": {"ip": "10.0.1.1/24", "mac": "08:00:00:00:01:11"},
                             "h2": {"ip": "10.0.2.2/24", "mac": "08:00:00:00:02:22"}},
                   "switches": {"s1": {}, "s2": {}},
                   "links": [["h1", "s1-p1"], ["h2", "s2-p1"], ["s1-p2", "s2-p2"]]}"""
    with pytest.raises(ConfigError, match="no spine: kvfabric reads a switch with hosts as a leaf"):
        parse_tutorials_topology(triangle, "tri.json")


# -- generated fabrics ---------------------------------------------------------------------


def test_generated_fabric_round_trips_through_yaml() -> None:
    cfg = leaf_spine(3, 4, 2, link_bps=100_000_000_000, prefill_leaves=1, name="gen")
    back = parse_config(to_yaml(cfg), "<generated>")
    assert back == cfg
    assert [h.pool for h in back.hosts].count(Pool.PREFILL) == 2


def _same(a: FabricConfig, b: FabricConfig) -> bool:
    return (a.switches, a.hosts, a.links, a.controller) == (
        b.switches,
        b.hosts,
        b.links,
        b.controller,
    )


def test_every_shipped_topology_round_trips() -> None:
    assert len(SHIPPED) >= 3
    for path in SHIPPED:
        cfg = load_config(path)
        assert _same(parse_config(to_yaml(cfg), "x.yaml"), cfg), path


# -- kvfabric check-config -----------------------------------------------------------------


def test_check_config_prints_a_summary(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    assert main(["check-config", "topologies/spine4.yaml"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("topologies/spine4.yaml: OK\n")
    assert "fabric spine4: 4 leaves, 4 spines, 8 hosts (4 decode, 4 prefill), 16 leaf-spine" in out
    assert "4 spine paths per pair of leaves" in out
    assert out.rstrip().endswith("scheduling none")


def test_check_config_names_the_scheduling_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "f.yaml"
    path.write_text(BASE + "controller:\n  scheduling: {policy: srpt, max_wait: 20ms}\n")
    assert main(["check-config", str(path)]) == 0
    assert capsys.readouterr().out.rstrip().endswith("scheduling srpt (max wait 20ms)")


def test_check_config_reports_the_located_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "fabric.yaml"
    bad.write_text(BASE.replace("{switch: leaf1, port: 3}", "{switch: leaf1, port: x}", 1))
    assert main(["check-config", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err == f"error: {bad}:11:31: links[0].a.port: expected an integer 1..510, got 'x'\n"


def test_check_config_never_prints_a_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "fabric.yaml"
    bad.write_text("switches: {}\nlinks: 3\n")
    proc = subprocess.run(
        [sys.executable, "-m", "kvfabric.cli", "check-config", str(bad)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stderr == f"error: {bad}:1:11: switches: expected a list, got a mapping\n"


def test_a_batch_wait_round_trips_and_is_bounded() -> None:
    from controller.config import ControllerSettings, Policy, SchedulingSettings

    settings = ControllerSettings(
        scheduling=SchedulingSettings(Policy.SRPT, 0.1, batch_max_wait_s=1.5)
    )
    cfg = leaf_spine(2, 2, 1, link_bps=10**9, controller=settings, name="gen")
    text = to_yaml(cfg)
    assert "batch_max_wait: 1.5s" in text
    back = parse_config(text, "<generated>")
    assert back.controller.scheduling.batch_wait_s == 1.5
    assert back.controller.scheduling.max_wait_s == 0.1
    bad = text.replace("batch_max_wait: 1.5s", "batch_max_wait: 2min")
    with pytest.raises(ConfigError, match=r"controller\.scheduling\.batch_max_wait"):
        parse_config(bad, "f.yaml")


def test_a_coalesce_window_round_trips_and_is_bounded() -> None:
    from controller.config import ApiSettings, ControllerSettings

    settings = ControllerSettings(api=ApiSettings(coalesce_window_s=0.002))
    cfg = leaf_spine(2, 2, 1, link_bps=10**9, controller=settings, name="gen")
    text = to_yaml(cfg)
    assert "coalesce_window: 2ms" in text
    assert parse_config(text, "<generated>").controller.api.coalesce_window_s == 0.002
    bad = text.replace("coalesce_window: 2ms", "coalesce_window: 1s")
    with pytest.raises(ConfigError, match=r"controller\.api\.coalesce_window"):
        parse_config(bad, "f.yaml")
