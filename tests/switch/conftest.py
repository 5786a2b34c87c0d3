"""Fixtures of the switch tests: root skipping, namespaces, veth pairs, switch processes.

Every namespace and link a test creates has a name unique to this process and is
removed by name in teardown; every switch process is stopped by its pid.
Nothing else on the machine is touched.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from softswitch.switch.process import SwitchProcess
from tests.support.netns import VethPair, namespace, veths
from tests.support.p4rt_client import StreamClient

from .harness import FABRIC_P4, fabric
from .netns import NsPort

CPU_PORT = 255


@pytest.fixture
def netns() -> Iterator[str]:
    with namespace() as name:
        yield name


@pytest.fixture
def veth_pairs(netns: str) -> Iterator[list[VethPair]]:
    with veths(netns, 3) as pairs:
        yield pairs


@dataclass
class SwitchOnVeths:
    """A running ``kvfabric switch`` with ports 1..n on veths, and a primary client.

    ``hosts[n]`` is Scapy on the namespace side of switch port ``n``.
    """

    process: SwitchProcess
    client: StreamClient
    hosts: dict[int, NsPort]
    pairs: list[VethPair]
    pcap_dir: Path
    extra: dict[str, object] = field(default_factory=dict)

    def reset(self) -> None:
        """A fresh pipeline (all state cleared), quiet sockets, an empty stream queue."""
        info, config = fabric()
        self.client.set_pipeline(info, config)
        for host in self.hosts.values():
            host.drain()
        while not self.client.responses.empty():
            self.client.responses.get_nowait()


@contextmanager
def running_fabric(tmp: Path, *extra_argv: str, ports: int = 3) -> Iterator[SwitchOnVeths]:
    """Namespace, veths, a switch process on them running fabric_test.p4, a primary client."""
    with namespace() as ns, veths(ns, ports) as pairs:
        argv = [a for i, p in enumerate(pairs, 1) for a in ("-i", f"{i}@{p.outside}")]
        argv += ["--pcap", str(tmp), *extra_argv, str(FABRIC_P4)]
        argv += ["--", "--grpc-server-addr", "127.0.0.1:0", "--cpu-port", str(CPU_PORT)]
        hosts: dict[int, NsPort] = {}
        with SwitchProcess(argv) as process:
            client = StreamClient(process.address)
            try:
                hosts.update({i: NsPort(ns, p.inside) for i, p in enumerate(pairs, 1)})
                client.become_primary(1)
                yield SwitchOnVeths(process, client, hosts, pairs, tmp)
            finally:
                client.close()
                for host in hosts.values():
                    host.close()


@pytest.fixture(scope="module")
def switch_fabric(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SwitchOnVeths]:
    with running_fabric(tmp_path_factory.mktemp("pcap")) as running:
        yield running


@pytest.fixture
def fab(switch_fabric: SwitchOnVeths) -> SwitchOnVeths:
    """The module's running switch, reset for this test."""
    assert switch_fabric.process.running(), switch_fabric.process.stderr_text()
    switch_fabric.reset()
    return switch_fabric
