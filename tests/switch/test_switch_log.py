"""The switch's log, as simple_switch_grpc's: per packet at its default level, with its flags.

A real ``kvfabric switch`` process runs fabric_test.p4; one frame is switched by
an l2 entry installed over P4Runtime, and the log must show its way: parser
states, the table applied with hit and entry handle, the action entry, the
egress port.  At ``-L info`` the log has no per-packet lines.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.support.p4rt_client import insert

from .conftest import running_fabric
from .harness import action, l2_entry
from .test_switch_packets import MAC, l2_frame, mac, payload_is

pytestmark = pytest.mark.root

PACKET_LINES = (
    "[cxt 0] Processing packet received on port 1",
    "[cxt 0] Parser 'parser': start",
    "[cxt 0] Parser 'parser' entering state 'start'",
    "[cxt 0] Extracting header 'ethernet'",
    "[cxt 0] Applying table 'MyIngress.l2'",
    "[cxt 0] Table 'MyIngress.l2': hit with handle 0",
    "[cxt 0] Action entry is MyIngress.forward - 2,",
    "[cxt 0] Egress port is 2",
    "[cxt 0] Transmitting packet of size",
)


def _switch_one_frame(tmp: Path, *argv: str, log_file: Path | None = None) -> str:
    """Run a switch with ``argv``, switch one frame from port 1 to port 2; its log text
    (``log_file``'s, or else standard error's)."""
    with running_fabric(tmp, *argv) as fab:
        fab.client.write([insert(l2_entry(mac(MAC[2]), action("forward", 2)))])
        fab.hosts[1].send(l2_frame(MAC[2], MAC[1], b"logged"))
        assert fab.hosts[2].expect(payload_is(b"logged"))
        time.sleep(0.2)
        fab.process.stop()
        return log_file.read_text() if log_file else fab.process.stderr_text()


def _in_order(text: str, lines: tuple[str, ...]) -> bool:
    at = 0
    for line in lines:
        at = text.find(line, at)
        if at < 0:
            return False
    return True


def test_the_default_level_logs_each_packets_way(tmp_path: Path) -> None:
    log = _switch_one_frame(tmp_path, "--log-console")
    assert _in_order(log, PACKET_LINES), log


def test_log_file_and_level_flags(tmp_path: Path) -> None:
    log_file = tmp_path / "switch.log"
    log = _switch_one_frame(tmp_path, "--log-file", str(log_file), "-L", "debug", log_file=log_file)
    assert _in_order(log, PACKET_LINES[1:4]), log
    assert "Applying table" not in log  # a trace-level line
    assert "Table 'MyIngress.l2': hit with handle 0" in log
    quiet = _switch_one_frame(tmp_path, "--log-console", "-L", "info")
    assert "[cxt 0]" not in quiet
