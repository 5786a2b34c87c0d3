"""p4runtime-shell, the P4 community's client, drives a running ``kvfabric switch`` (root).

The switch starts without a program (``--no-p4``) on three veths.  The test
compiles fabric_test.p4 with ``kvfabric compile`` as a user would, then runs
p4runtime-shell (in its own venv, .venv-p4rt, because it pins protobuf < 3.21)
in a subprocess: it pushes the P4Info and device config, inserts and reads
table entries, reads a counter, sniffs a packet-in and sends a packet-out,
while this test sends and captures the frames with Scapy.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from softswitch.switch.process import SwitchProcess
from tests.support.netns import namespace, veths

from .harness import FABRIC_P4
from .netns import NsPort

pytestmark = pytest.mark.root
ROOT = Path(__file__).resolve().parents[2]
P4RT_PYTHON = ROOT / ".venv-p4rt" / "bin" / "python"
SESSION = Path(__file__).with_name("p4rt_shell_session.py")


class Session:
    """The p4runtime-shell subprocess, spoken to one JSON line at a time."""

    def __init__(self, *argv: str) -> None:
        self.proc = subprocess.Popen(
            [str(P4RT_PYTHON), str(SESSION), *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def read(self, step: str) -> dict[str, Any]:
        assert self.proc.stdout is not None
        while line := self.proc.stdout.readline():
            if line.startswith("{"):
                message: dict[str, Any] = json.loads(line)
                assert message["step"] == step, message
                return message
        _, err = self.proc.communicate(timeout=10)
        raise AssertionError(f"p4runtime-shell ended before {step!r}:\n{err}")

    def go(self, line: str = "") -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@pytest.fixture
def compiled(tmp_path: Path) -> tuple[Path, Path]:
    p4info, config = tmp_path / "fabric.p4info.txtpb", tmp_path / "fabric.json"
    subprocess.run(
        [sys.executable, "-m", "kvfabric.cli", "compile", str(FABRIC_P4), "-o", str(config),
         "--p4runtime-files", str(p4info)],
        check=True,
        capture_output=True,
        timeout=120,
    )  # fmt: skip
    return p4info, config


@pytest.fixture
def bare_switch() -> Iterator[tuple[SwitchProcess, dict[int, NsPort]]]:
    with namespace() as ns, veths(ns, 3) as pairs:
        argv = [a for i, p in enumerate(pairs, 1) for a in ("-i", f"{i}@{p.outside}")]
        argv += ["--no-p4", "--", "--grpc-server-addr", "127.0.0.1:0", "--cpu-port", "255"]
        with SwitchProcess(argv) as process:
            hosts = {i: NsPort(ns, p.inside) for i, p in enumerate(pairs, 1)}
            try:
                yield process, hosts
            finally:
                for host in hosts.values():
                    host.close()


@pytest.mark.skipif(not P4RT_PYTHON.exists(), reason=".venv-p4rt (p4runtime-shell) is absent")
def test_p4runtime_shell_drives_the_switch(
    compiled: tuple[Path, Path], bare_switch: tuple[SwitchProcess, dict[int, NsPort]]
) -> None:
    process, hosts = bare_switch
    p4info, config = compiled
    session = Session(process.address, str(p4info), str(config))
    try:
        entries = session.read("entries")
        assert entries["l2"] == [
            {"dst": "02000000000b", "action": "MyIngress.forward"},
            {"dst": "0200000000fe", "action": "MyIngress.to_cpu"},
        ]
        assert entries["lpm"] == ["0a000300", 24]

        frames = [
            Ether(dst="02:00:00:00:00:0b", src="02:00:00:00:00:0a", type=0x88B6)
            / Raw(b"shell-%d" % i)
            for i in range(3)
        ]
        hosts[1].send(*frames)
        routed = (
            Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:0a")
            / IP(dst="10.0.3.9")
            / UDP()
            / Raw(b"routed")
        )
        hosts[1].send(routed)
        wanted = {bytes(f) for f in frames}
        got = hosts[2].sniff(3.0, lambda p: bytes(p) in wanted, count=len(wanted))
        assert {bytes(p) for p in got} == wanted
        assert hosts[3].expect(lambda p: Raw in p and p[Raw].load == b"routed")[Ether].dst == (
            "02:00:00:00:00:0c"
        )
        session.go()
        counter = session.read("counter")
        assert counter["packets"] == 4
        assert counter["bytes"] == sum(len(bytes(f)) for f in [*frames, routed])

        session.read("sniffing")
        punted = Ether(dst="02:00:00:00:00:fe", src="02:00:00:00:00:0b") / Raw(b"to-shell")
        hosts[2].send(punted)
        session.go()
        [packet_in] = session.read("packet_in")["packets"]
        assert bytes.fromhex(packet_in["payload"]) == bytes(punted)
        assert "02" in packet_in["metadata"].values()  # ingress_port 2

        out = Ether(dst="02:00:00:00:00:0c", src="02:00:00:00:00:fe") / Raw(b"from-shell")
        session.go(bytes(out).hex())
        session.read("packet_out")
        assert bytes(hosts[3].expect(lambda p: Raw in p and p[Raw].load == b"from-shell")) == (
            bytes(out)
        )
        session.go()
        session.read("done")
    finally:
        session.close()
    assert process.running()
