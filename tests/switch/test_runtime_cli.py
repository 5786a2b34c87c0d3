"""simple_switch_CLI's commands against a real pipeline's runtime state (no sockets)."""

from __future__ import annotations

import pytest

from softswitch.runtime.matches import Lpm, Range, Ternary
from softswitch.runtime.state import RuntimeState
from softswitch.switch.argv import parse_argv
from softswitch.switch.control import handle_request
from softswitch.switch.dataplane import load_program_file
from softswitch.switch.packet_path import Switch as PacketPath
from softswitch.switch.runtime_cli import PRIORITY_BASE, CliError, RuntimeCli

from .harness import FABRIC_P4, make_device

ETH_IPV4 = bytes.fromhex("0000000000020000000000010800")
IPV4 = bytes.fromhex("4500001400000000400600000a0000010a000202")


class Switch:
    """A pipeline and the switch's packet path (its traffic manager), without ports."""

    def __init__(self) -> None:
        _, _, self.dataplane = load_program_file(str(FABRIC_P4), 511, 255)
        self.path = PacketPath(parse_argv(["--no-p4"]), {}, make_device())
        self.cli = RuntimeCli(self.state, self.path)

    def state(self) -> RuntimeState:
        return self.dataplane.state


@pytest.fixture
def sw() -> Switch:
    return Switch()


def test_table_add_dump_delete_and_the_packet_path(sw: Switch) -> None:
    out = sw.cli.run("table_add ipv4_lpm set_nhop 10.0.2.0/24 => 3 00:00:00:00:02:02")
    assert out.endswith("Entry has been added with handle 0")
    table = sw.state().table("MyIngress.ipv4_lpm")
    (entry,) = table.entries()
    assert entry.matches == (Lpm(0x0A000200, 24),)
    assert entry.action is not None and entry.action.args == (3, 0x000000000202)
    outputs = sw.dataplane.process(1, ETH_IPV4 + IPV4)
    assert [port for port, _ in outputs] == [3]
    assert outputs[0][1][:6] == bytes.fromhex("000000000202")
    dump = sw.cli.run("table_dump MyIngress.ipv4_lpm")
    assert "Dumping entry 0x0" in dump and "0a000200/24" in dump and "set_nhop - 3, 202" in dump
    assert sw.cli.run("table_num_entries ipv4_lpm") == "1"
    sw.cli.run("table_delete ipv4_lpm 0")
    assert len(table) == 0
    with pytest.raises(CliError, match="INVALID_HANDLE"):
        sw.cli.run("table_delete ipv4_lpm 0")


def test_priorities_follow_bmv2_smaller_wins(sw: Switch) -> None:
    sw.cli.run("table_add acl acl_drop 0&&&0 0x0800&&&0xffff 0->255 => 20")
    sw.cli.run("table_add acl acl_forward 1&&&0x1ff 0&&&0 6->6 => 4 10")
    entries = {
        e.action.name.split(".")[-1]: e for e in sw.state().table("acl").entries() if e.action
    }
    assert entries["acl_forward"].priority == PRIORITY_BASE - 10
    assert entries["acl_drop"].matches[:2] == (None, Ternary(0x0800, 0xFFFF))
    assert entries["acl_forward"].matches[2] == Range(6, 6)
    assert entries["acl_forward"].priority > entries["acl_drop"].priority
    assert [p for p, _ in sw.dataplane.process(1, ETH_IPV4 + IPV4)] == [4]
    assert "Priority: 10" in sw.cli.run("table_dump acl")
    with pytest.raises(CliError, match="needs a priority"):
        sw.cli.run("table_add acl acl_drop 0&&&0 0&&&0 0->1 =>")


def test_counters_registers_defaults(sw: Switch) -> None:
    sw.dataplane.process(5, ETH_IPV4 + IPV4)
    sw.dataplane.process(5, ETH_IPV4 + IPV4)
    out = sw.cli.run("counter_read port_counter 5")
    assert out == "MyIngress.port_counter[5]=  BmCounterValue(packets=2, bytes=68)"
    assert sw.cli.run("register_read last_len 5") == "MyIngress.last_len[5]= 34"
    sw.cli.run("register_write last_len 5 7")
    assert sw.cli.run("register_read last_len 5") == "MyIngress.last_len[5]= 7"
    sw.cli.run("counter_reset port_counter")
    assert "packets=0" in sw.cli.run("counter_read port_counter 5")
    sw.cli.run("table_set_default ipv4_lpm set_nhop 9 0x1")
    assert [p for p, _ in sw.dataplane.process(1, ETH_IPV4 + IPV4)] == [9]


def test_multicast_and_mirroring(sw: Switch) -> None:
    sw.cli.run("mc_mgrp_create 1")
    assert sw.cli.run("mc_node_create 0 1 2").endswith("handle 0")
    sw.cli.run("mc_node_associate 1 0")
    sw.cli.run("table_add l2 flood 00:00:00:00:00:02 => 1")
    arp = ETH_IPV4[:12] + b"\x08\x06" + bytes(28)
    assert sorted(p for p, _ in sw.dataplane.process(3, arp)) == [1, 2]
    assert "mgrp(1)" in sw.cli.run("mc_dump")
    sw.cli.run("mirroring_add 5 7")
    session = sw.state().pre.clone_session(5)
    assert session is not None and [r.egress_port for r in session.replicas] == [7]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("frobnicate 1", "Unknown syntax"),
        ("table_add nope drop 1 => ", "NOT_FOUND"),
        ("table_add ipv4_lpm set_nhop 10.0.0.0/33 => 1 2", "prefix length 33"),
        ("table_add ipv4_lpm set_nhop 10.0.0.0/8 => 1", "needs 2 parameters"),
        ("table_add ipv4_lpm set_nhop 10.0.0.0/8 => 512 2", "does not fit in 9 bits"),
        ("table_add ipv4_lpm set_nhop 10.0.0.0/8 1 2", "no '=>'"),
        ("table_add ipv4_lpm", "missing arguments"),
        ("counter_read port_counter 64", "OUT_OF_RANGE"),
        ("mc_node_associate 9 9", "Invalid mc_node_associate operation"),
        ("set_queue_rate x", "not an integer"),
    ],
)
def test_errors_leave_the_state_unchanged(sw: Switch, line: str, message: str) -> None:
    with pytest.raises(CliError, match=message):
        sw.cli.run(line)
    assert all(len(t) == 0 for t in sw.state().tables.values())


def test_queue_settings_reach_the_switchs_traffic_manager(sw: Switch) -> None:
    sw.cli.run("set_queue_depth 1 2")
    sw.cli.run("set_queue_rate 50")
    sw.path.on_dataplane_change(None)  # a new pipeline keeps the switch's queue settings
    tm = sw.path.tm
    first = tm.enqueue(2, 0)
    assert first is not None and tm.enqueue(2, 0) is None  # depth 1 on port 2
    first = tm.enqueue(3, 0)
    second = tm.enqueue(3, 0)
    assert first is not None and second is not None
    assert second.departure_ns - first.departure_ns == 20_000_000  # 50 pps
    with pytest.raises(CliError, match="set_queue_rate RATE"):
        sw.cli.run("set_queue_rate 1 2 3 4")


def test_no_pipeline_and_the_json_protocol() -> None:
    cli = RuntimeCli(lambda: None, PacketPath(parse_argv(["--no-p4"]), {}, make_device()))
    assert handle_request(cli, b'{"command": "show_tables"}') == {
        "ok": False,
        "error": "no P4 program is loaded on the switch",
    }
    assert handle_request(cli, b"[1]")["ok"] is False
    assert "not a JSON line" in str(handle_request(cli, b"{")["error"])
    assert handle_request(cli, b'{"command": "# a comment"}') == {"ok": True, "output": ""}
