"""The 2 x 2 fabric forwarding for real: kvfabric switches running kv_fabric.p4 (root).

The switches are provisioned by the controller service (``kvfabric controller``,
started as the experiment starts it, driven over its HTTP API) when this installation
has it, and otherwise by ``static_fabric.StaticControl``, a test double that writes
p4/README.md's entries directly (``KVFABRIC_LAB_CONTROL=static`` forces the double).
These tests check that every host reaches every other, that links are shaped, that a
KV transfer goes up the spine the controller chose and ECMP transfers go where the
documented hash says (so the controller's ECMP groups are in the order the lab assumes),
all verified on the switches' interface counters, and that nothing is left after
teardown.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from controller.config import FabricConfig
from controller.config.generate import leaf_spine
from experiment.ecmp import EcmpOracle
from experiment.fabric import lab_fabric, write_fabric
from experiment.flows import RECEIVER_PORT, FlowKey
from lab.control import ControllerProcess, FabricControl, HttpControl
from lab.kvtransfer import Receiver, TransferJob, send
from lab.monitor import tx_bytes
from lab.net import Lab, leftovers
from lab.netns import factory_in, socket_in
from lab.topo import FabricTopo

from .static_fabric import PROGRAM, StaticControl, compile_program

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.root,
    pytest.mark.slow,
    pytest.mark.skipif(
        not PROGRAM.exists() or not (ROOT / "softswitch" / "switch").is_dir(),
        reason="needs p4/kv_fabric.p4 and the kvfabric switch",
    ),
]


@dataclass
class Running:
    lab: Lab
    fabric: FabricConfig
    control: FabricControl


def _use_the_controller() -> bool:
    return os.environ.get("KVFABRIC_LAB_CONTROL") != "static"


@pytest.fixture(scope="module")
def fabric_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    out = tmp_path_factory.mktemp("kvlab")
    fabric = lab_fabric(leaf_spine(2, 2, 2, link_bps=20_000_000))
    lab = Lab(FabricTopo(fabric), log_dir=out / "logs")
    control: FabricControl
    lab.start()
    try:
        if _use_the_controller():
            fabric_file = write_fabric(fabric, out / "fabric.yaml")
            ControllerProcess(fabric_file, out / "logs" / "controller.log", lab.processes).start()
            control = HttpControl.for_fabric(fabric)
        else:
            control = StaticControl(fabric, compile_program(out))
        asyncio.run(control.ready(90))
        asyncio.run(control.set_mode("kv-aware"))
        yield Running(lab, fabric, control)
    finally:
        lab.stop(check=False)
    assert lab.footprint is not None
    assert leftovers(lab.footprint, wait_s=0) == []


def test_all_hosts_reach_each_other(fabric_lab: Running):
    lab, fabric = fabric_lab.lab, fabric_lab.fabric
    failed = []
    for a, b in itertools.permutations(fabric.hosts, 2):
        out = lab.cmd(a.name, "ping", "-c", "1", "-W", "3", str(b.ipv4))
        if " 0% packet loss" not in out:
            out = lab.cmd(a.name, "ping", "-c", "2", "-W", "3", str(b.ipv4))  # first ARP
            if "100% packet loss" in out:
                failed.append(f"{a.name}->{b.name}")
    assert failed == []


def test_links_are_shaped_to_their_rate(fabric_lab: Running, tmp_path: Path):
    lab = fabric_lab.lab
    server = lab.popen("h21", "iperf3-s", ["iperf3", "-s", "-p", "5301", "-1"], tmp_path / "s.log")
    try:
        lab.cmd("h11", "sleep", "0.3")
        out = lab.cmd("h11", "iperf3", "-c", "10.0.2.1", "-p", "5301", "-t", "4", "-J")
        report = json.loads(out)
        bps = report["end"]["sum_received"]["bits_per_second"]
    finally:
        lab.processes.stop(server)
    print(f"TCP h11->h21 through two switches: {bps / 1e6:.2f} Mb/s on 20 Mb/s links")
    assert 12e6 < bps <= 20.5e6


def _uplink_bytes(lab: Lab, leaf: str) -> dict[str, int]:
    return {
        spine: tx_bytes(c.leaf_intf) for (lf, spine), c in lab.topo.cables.items() if lf == leaf
    }


def test_a_pinned_transfer_goes_up_its_spine_and_ecmp_follows_the_hash(fabric_lab: Running):
    lab, fabric, control = fabric_lab.lab, fabric_lab.fabric, fabric_lab.control
    oracle = EcmpOracle(fabric, salts=(0,))
    nbytes = 400_000

    async def scenario() -> list[tuple[str | None, str, dict[str, int]]]:
        receiver = Receiver()
        await receiver.start(socket_in(lab.netns_path("h21")), ("10.0.2.1", RECEIVER_PORT))
        seen: list[tuple[str | None, str, dict[str, int]]] = []
        try:
            for spine in ("spine2", "spine1"):  # pinned, whatever ECMP would say
                before = _uplink_bytes(lab, "leaf1")
                t = TransferJob("h11", "h21", "10.0.1.1", "10.0.2.1", nbytes)
                out = await send(
                    t, sockets=factory_in(lab.netns_path("h11")), paths=control, spine=spine
                )
                assert out.error is None, out.error
                after = _uplink_bytes(lab, "leaf1")
                seen.append((spine, "pinned", {s: after[s] - before[s] for s in after}))
            for port in (20011, 20012, 20013, 20014, 20015, 20016):  # ECMP: no controller
                before = _uplink_bytes(lab, "leaf1")
                t = TransferJob("h12", "h22", "10.0.1.2", "10.0.2.2", nbytes, ecmp_port=port)
                await receiver.close()
                receiver2 = Receiver()
                await receiver2.start(socket_in(lab.netns_path("h22")), ("10.0.2.2", RECEIVER_PORT))
                try:
                    out = await send(t, sockets=factory_in(lab.netns_path("h12")))
                finally:
                    await receiver2.close()
                assert out.error is None, out.error
                after = _uplink_bytes(lab, "leaf1")
                predicted = oracle.spine(FlowKey("h12", "h22", "tcp", port, RECEIVER_PORT))
                seen.append((predicted, "ecmp", {s: after[s] - before[s] for s in after}))
        finally:
            await receiver.close()
        return seen

    seen = asyncio.run(scenario())
    for expected, how, moved in seen:
        assert expected is not None
        other = [s for s in moved if s != expected]
        assert moved[expected] >= nbytes, (how, expected, moved)
        assert all(moved[s] < nbytes / 10 for s in other), (how, expected, moved)
    ecmp_spines = {expected for expected, how, _ in seen if how == "ecmp"}
    assert ecmp_spines == {"spine1", "spine2"}  # ECMP spread the six flows over both spines
