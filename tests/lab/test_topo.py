"""The Mininet topology and the lab fabric are data: checked without root."""

from __future__ import annotations

import pytest

from controller.config import FabricConfig, load_config
from controller.config.generate import leaf_spine
from experiment.errors import FabricError
from experiment.fabric import fabric_from_params, lab_fabric
from experiment.scenario import FabricParams, LinkRate
from lab.links import ShapedIntf
from lab.topo import FabricTopo, default_prefix

from .conftest import ROOT


def test_topo_from_parameters(fabric_2x2: FabricConfig):
    topo = FabricTopo(fabric_2x2, queue_packets=30, prefix="kvlt01")
    assert sorted(topo.switches()) == ["leaf1", "leaf2", "spine1", "spine2"]
    assert sorted(topo.hosts()) == ["h11", "h12", "h21", "h22"]
    assert len(topo.links()) == 4 + 4
    leaf1 = topo.nodeInfo("leaf1")
    assert leaf1["device_id"] == 1
    assert leaf1["grpc_addr"] == fabric_2x2.switch("leaf1").p4runtime
    h11 = topo.nodeInfo("h11")
    assert h11["ip"] == "10.0.1.1/24" and h11["mac"] == "08:00:00:00:01:01"
    info = topo.linkInfo("h11", "leaf1")
    assert info["port1"] == 0 and info["port2"] == 1
    assert info["bw"] == 20.0 and info["max_queue_size"] == 30 and info["mtu"] == 9000
    assert info["intfName2"] == "kvlt01s1p1"
    cable = topo.cable("leaf1", "spine2")
    assert (cable.leaf_port, cable.spine_port) == (4, 1)
    assert cable.leaf_intf == "kvlt01s1p4" and cable.spine_intf == "kvlt01s4p1"
    assert topo.intf("spine2", 1) == cable.spine_intf
    with pytest.raises(FabricError):
        topo.cable("leaf1", "leaf2")


def test_topo_from_the_controllers_file():
    fabric = load_config(ROOT / "topologies" / "lab-2x2.yaml")
    topo = FabricTopo(fabric)
    assert topo.linkInfo("leaf1", "spine1")["port1"] == 3
    assert topo.prefix == default_prefix()
    assert all(len(i) <= 15 for i in topo.switch_intfs.values())


def test_real_rates_are_refused_until_scaled():
    real = load_config(ROOT / "topologies" / "design-example.yaml")
    with pytest.raises(FabricError, match="at most 1 Gb/s"):
        FabricTopo(real)
    scaled = lab_fabric(real, link_bps=20_000_000)
    assert {link.capacity_bps for link in scaled.links} == {20_000_000}
    assert {h.capacity_bps for h in scaled.hosts} == {20_000_000}
    FabricTopo(scaled)


def test_lab_fabric_slows_one_cable_and_picks_free_ports():
    base = leaf_spine(2, 2, 1)
    fabric = lab_fabric(base, link_rates=[LinkRate("leaf1", "spine2", 5_000_000)])
    rates = {(link.a.switch, link.b.switch): link.capacity_bps for link in fabric.links}
    assert rates[("leaf1", "spine2")] == 5_000_000
    assert rates[("leaf2", "spine2")] == 20_000_000
    ports = {s.p4runtime for s in fabric.switches}
    assert len(ports) == 4 and not any(p.endswith(":50001") for p in ports)
    assert fabric.controller.api.host == "127.0.0.1"
    with pytest.raises(FabricError, match="no leaf 'leaf9'"):
        lab_fabric(base, link_rates=[LinkRate("leaf9", "spine2", 1)])


def test_fabric_from_params():
    f = fabric_from_params(
        FabricParams(spines=4, leaves=4, hosts_per_leaf=2, prefill_leaves=2), "x"
    )
    assert f.name == "x" and len(f.spines) == 4
    assert [str(h.pool) for h in f.hosts].count("prefill") == 4


def test_no_netem_here():
    with pytest.raises(FabricError, match="no netem"):
        ShapedIntf.delayCmds(" parent 5:1 ", delay="1ms")
    with pytest.raises(FabricError, match="no netem"):
        ShapedIntf.delayCmds(" parent 5:1 ", loss=1.0)
    cmds, parent = ShapedIntf.delayCmds(" parent 5:1 ", max_queue_size=40)
    assert cmds == ["%s qdisc add dev %s  parent 5:1  handle 10: pfifo limit 40"]
    assert parent == " parent 10:1 "
    assert ShapedIntf.delayCmds(" root ") == ([], " root ")


def test_a_lab_switch_declares_its_shaped_rates():
    # the command line alone (no Mininet node is started): each shaped port reports the
    # rate its link is shaped to; BMv2, which has no port speeds, is not given them
    from types import SimpleNamespace

    from lab.nodes import Bmv2Switch, P4Switch

    class Intf(SimpleNamespace):
        __hash__ = object.__hash__  # type: ignore[assignment]  # a key of the ports map

    intfs = [Intf(name="s1p3", params={"bw": 20.0}), Intf(name="s1p1", params={"bw": 0.5}),
             Intf(name="lo", params={})]  # fmt: skip
    for cls in (P4Switch, Bmv2Switch):
        switch = object.__new__(cls)
        switch.intfList = lambda: intfs
        switch.ports = {intfs[0]: 3, intfs[1]: 1, intfs[2]: 0}
        switch.device_id, switch.extra_args, switch.program = 1, (), None
        switch.grpc_addr, switch.cpu_port = "127.0.0.1:50001", 255
        assert switch.port_rates() == [(1, 500_000), (3, 20_000_000)]
        argv = switch.launch_command()
        speeds = [argv[i + 1] for i, a in enumerate(argv) if a == "--port-speed"]
        assert speeds == (["1:500000", "3:20000000"] if cls is P4Switch else [])
        assert argv.index("-i") < argv.index("--")
