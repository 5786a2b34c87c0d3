"""The Mininet fabric as root: built from parameters, shaped, and cleaned up.

These tests build real 2-leaf x 2-spine fabrics with ``kvfabric switch`` processes
(started without a program: forwarding needs the controller, see
test_reachability_root.py) and check what the machine looks like while the lab runs
and after it is torn down, normally or by an exception.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from controller.config import FabricConfig
from lab.errors import SwitchStartError
from lab.net import Lab, leftovers
from lab.nodes import P4Switch
from lab.procs import alive
from lab.topo import FabricTopo

pytestmark = [pytest.mark.root, pytest.mark.slow]


def tc_json(*args: str) -> list[dict[str, Any]]:
    out = subprocess.run(["tc", "-j", *args], check=True, capture_output=True, text=True).stdout
    result: list[dict[str, Any]] = json.loads(out)
    return result


def htb_rate(intf: str, classid: str = "5:1") -> str:
    """The rate of the interface's htb class as tc prints it (``20Mbit``)."""
    out = subprocess.run(
        ["tc", "class", "show", "dev", intf], check=True, capture_output=True, text=True
    ).stdout
    (line,) = [line for line in out.splitlines() if line.split()[2:3] == [classid]]
    words = line.split()
    assert words[:2] == ["class", "htb"], line
    return words[words.index("rate") + 1]


def test_2x2_from_parameters_is_shaped_addressed_and_cleaned_up(
    fabric_2x2: FabricConfig, tmp_path: Path
):
    topo = FabricTopo(fabric_2x2, queue_packets=30)
    with Lab(topo, log_dir=tmp_path) as lab:
        pids = lab.switch_pids
        assert sorted(pids) == ["leaf1", "leaf2", "spine1", "spine2"]
        assert all(alive(pid) for pid in pids.values())
        # Every switch-side interface: htb at the link rate, a 30-packet pfifo, MTU 9000.
        assert len(topo.switch_intfs) == 12
        for intf in topo.switch_intfs.values():
            qdiscs = {q["handle"]: q for q in tc_json("qdisc", "show", "dev", intf)}
            assert {h: q["kind"] for h, q in qdiscs.items()} == {
                "5:": "htb", "10:": "pfifo", "20:": "pfifo"
            }, intf  # fmt: skip
            assert qdiscs["10:"]["options"]["limit"] == 30
            assert htb_rate(intf) == "20Mbit"
            assert htb_rate(intf, "5:2") == "512Kbit"  # the link probes' protected class
            assert Path(f"/sys/class/net/{intf}/mtu").read_text().strip() == "9000"
        # The switch process got simple_switch_grpc's argv for its ports.
        argv = lab.switch("leaf1").launch_command()
        assert argv[1:4] == ["-m", "kvfabric.cli", "switch"]
        for port in (1, 2, 3, 4):
            assert f"{port}@{topo.intf('leaf1', port)}" in argv
        assert argv[-4:] == [
            "--grpc-server-addr",
            fabric_2x2.switch("leaf1").p4runtime,
            "--cpu-port",
            "255",
        ]
        # Hosts: address, MAC, MTU, shaping, offloads off, a default route.
        for h in fabric_2x2.hosts:
            (addr,) = json.loads(
                lab.cmd(h.name, "ip", "-j", "addr", "show", "dev", f"{h.name}-eth0")
            )
            assert addr["mtu"] == 9000 and addr["address"] == h.mac
            assert {(a["local"], a["prefixlen"]) for a in addr["addr_info"]} == {(str(h.ipv4), 24)}
            assert "default dev" in lab.cmd(h.name, "ip", "route", "show", "default")
            assert "htb" in lab.cmd(h.name, "tc", "qdisc", "show", "dev", f"{h.name}-eth0")
            features = lab.cmd(h.name, "ethtool", "-k", f"{h.name}-eth0")
            for name in (
                "tx-checksumming",
                "tcp-segmentation-offload",
                "generic-segmentation-offload",
                "generic-receive-offload",
                "scatter-gather",
            ):
                assert f"{name}: off" in features, (h.name, name)
        footprint_pids = set(pids.values())
    assert lab.footprint is not None
    assert footprint_pids <= lab.footprint.pids
    assert len(lab.footprint.netns) == 4
    assert leftovers(lab.footprint, wait_s=0) == []
    assert not any(alive(pid) for pid in footprint_pids)


def test_an_exception_inside_the_lab_leaves_nothing(fabric_2x2: FabricConfig, tmp_path: Path):
    topo = FabricTopo(fabric_2x2)
    with pytest.raises(RuntimeError, match="boom"), Lab(topo, log_dir=tmp_path) as lab:
        sleeper = lab.popen("h11", "sleeper", ["sleep", "600"])
        assert alive(sleeper.pid)
        raise RuntimeError("boom")
    assert lab.footprint is not None
    assert sleeper.pid in lab.footprint.pids
    assert leftovers(lab.footprint, wait_s=0) == []


class ExitingSwitch(P4Switch):
    """A target whose process exits at once: the lab must say so and clean up."""

    def launch_command(self) -> list[str]:
        return [sys.executable, "-c", "import sys; print('cannot start'); sys.exit(3)"]


def test_a_switch_that_dies_at_start_is_reported_and_cleaned_up(
    fabric_2x2: FabricConfig, tmp_path: Path
):
    lab = Lab(FabricTopo(fabric_2x2), switch_cls=ExitingSwitch, log_dir=tmp_path)
    with pytest.raises(SwitchStartError, match=r"exited with status 3(.|\n)*cannot start"):
        lab.start()
    assert lab.footprint is not None
    assert leftovers(lab.footprint, wait_s=0) == []


def test_mn_custom_file_as_mn_loads_it(tmp_path: Path):
    """mn's --custom path (exec the file, buildTopo, customClass) without running mn itself.

    Running ``mn`` is avoided on purpose: on any error it runs ``mn -c``, a machine-wide
    cleanup that would hit other users' processes.
    """
    from mininet.util import buildTopo, customClass

    from .conftest import ROOT

    path = ROOT / "lab" / "mn_custom.py"
    customs: dict[str, Any] = {}
    exec(compile(path.read_text(), str(path), "exec"), customs, customs)  # what mn does
    topo = buildTopo(
        customs["topos"], "leafspine,spines=2,leaves=2,hosts_per_leaf=1,bw=10,queue=20"
    )
    switch = customClass(customs["switches"], "p4")
    host = customClass(customs["hosts"], "lab")
    assert topo.linkInfo("leaf1", "spine1")["cls"].__name__ == "ShapedLink"
    with Lab(topo, switch_cls=switch, host_cls=host, log_dir=tmp_path) as lab:
        intf = topo.intf("leaf1", 2)
        assert htb_rate(intf) == "10Mbit"
        assert len(lab.switch_pids) == 4
    assert lab.footprint is not None and leftovers(lab.footprint, wait_s=0) == []
