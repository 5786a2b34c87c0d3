"""The runner's loop, with a fake pipeline: ordering, expects, checks and the report."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from softswitch.errors import RuntimeConfigError, StfError
from softswitch.runtime.state import RuntimeState
from softswitch.runtime.tables import Table
from softswitch.stf import parse_stf, run_script


@dataclass
class Echo:
    """A fake pipeline: sends each packet out of port + 1, and records the calls."""

    state: RuntimeState = field(default_factory=RuntimeState)
    calls: list[tuple[int, bytes]] = field(default_factory=list)

    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        self.calls.append((port, data))
        return [(port + 1, data)]


@dataclass
class Fanout:
    """Sends every packet to ports 1 and 2, port 2 with a one-byte tag."""

    state: RuntimeState = field(default_factory=RuntimeState)

    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        return [(1, data), (2, b"\xee" + data)]


def run(text: str, target: Echo | Fanout) -> tuple[bool, str]:
    result = run_script(parse_stf(text, "t.stf"), target)
    return result.passed, result.report()


def test_packets_are_processed_in_file_order() -> None:
    target = Echo()
    passed, _ = run("packet 0 01\npacket 3 02\nexpect 1 01\nexpect 4 02\n", target)
    assert passed
    assert target.calls == [(0, b"\x01"), (3, b"\x02")]


def test_a_mismatch_fails_with_a_per_port_diff() -> None:
    passed, report = run("packet 0 0102\nexpect 1 0103\n", Echo())
    assert not passed
    assert "port 1: 1 packet expected, 1 received: MISMATCH" in report
    assert "expected: 0103" in report
    assert "received: 0102" in report
    assert report.splitlines()[-1].startswith("FAIL: t.stf")


def test_expects_may_come_before_or_after_the_packet() -> None:
    assert run("expect 1 01\npacket 0 01\n", Echo())[0]
    assert run("packet 0 01\nexpect 1 01\n", Echo())[0]


def test_a_packet_to_an_input_port_counts() -> None:
    # Port 1 is both an input (packet 1 ...) and gets the echo of port 0.
    passed, report = run("packet 0 01\npacket 1 02\nexpect 2 02\n", Echo())
    assert not passed
    assert "port 1: 0 packets expected, 1 received: MISMATCH" in report


def test_outputs_across_ports_are_independent() -> None:
    text = "packet 0 01\npacket 0 02\nexpect 2 EE02\nexpect 1 01\nexpect 2 EE01\nexpect 1 02\n"
    passed, _ = run(text, Fanout())
    assert not passed  # per-port order is 01 then 02 on port 2
    text = "packet 0 01\npacket 0 02\nexpect 2 EE01\nexpect 1 01\nexpect 2 EE02\nexpect 1 02\n"
    assert run(text, Fanout())[0]


def test_expect_without_data_and_prefix_rules() -> None:
    assert run("packet 0 0102\nexpect 1 01\n", Echo())[0]
    assert not run("packet 0 0102\nexpect 1 01 $\n", Echo())[0]
    assert run("packet 0 0102\nexpect 1 01 02$\n", Echo())[0]
    assert run("packet 0 0102\nexpect 1\n", Echo())[0]
    assert run("packet 0 0102\nexpect 1 **02\n", Echo())[0]


def test_wait_and_no_packet_change_nothing() -> None:
    assert run("packet 0 01\nwait\nno_packet\nexpect 1 01\n", Echo())[0]


def test_result_records_outputs_and_counts() -> None:
    result = run_script(parse_stf("packet 0 01\npacket 0 02\n", "t.stf"), Fanout())
    assert result.packets_sent == 2
    assert result.outputs[1] == (b"\x01", b"\x02")
    assert result.outputs[2] == (b"\xee\x01", b"\xee\x02")
    # Ports 1 and 2 are never named: ignored, so the test passes.
    assert result.passed


class NoTables(RuntimeState):
    def table(self, name: str) -> Table:
        raise RuntimeConfigError("NOT_FOUND", f"no table named '{name}'")


def test_a_control_plane_error_is_located_at_its_line() -> None:
    script = parse_stf("packet 0 01\nadd no_such_table k:1 a()\n", "t.stf")
    with pytest.raises(StfError) as info:
        run_script(script, Echo(state=NoTables()))
    assert info.value.line == 2
    assert str(info.value) == "t.stf:2: error: no table named 'no_such_table'"
