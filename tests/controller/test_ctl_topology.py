"""The topology graph (ports, tiers, spine paths, cable status) and the wiring audit."""

from __future__ import annotations

import pytest

from controller.config import load_config
from controller.config.generate import leaf_spine
from controller.engine import AuditRound, ProbeSeen, compare_wiring
from controller.errors import TopologyError
from controller.topology import LinkId, LinkStatus, PortRef, Tier, Topology


@pytest.fixture
def lab() -> Topology:
    return Topology(load_config("topologies/lab-2x2.yaml"))


def test_graph_nodes_and_edges(lab: Topology) -> None:
    g = lab.graph
    assert {n: g.nodes[n]["role"] for n in ("leaf1", "spine2", "h21")} == {
        "leaf1": "leaf",
        "spine2": "spine",
        "h21": "host",
    }
    assert g.number_of_edges() == 4 + 4  # four cables, four host links
    edge = g.edges["leaf1", "spine2"]
    assert edge["capacity_bps"] == 20_000_000
    assert edge["ports"] == {"leaf1": 4, "spine2": 1}
    assert edge["link"] == LinkId(PortRef("leaf1", 4), PortRef("spine2", 1))


def test_egress_ports_and_tiers(lab: Topology) -> None:
    tiers = {str(ref): port.tier for ref, port in lab.egress.items()}
    assert tiers["leaf1:1"] is Tier.INTRA_RACK
    assert tiers["leaf1:3"] is Tier.INTER_RACK
    assert tiers["spine1:2"] is Tier.SPINE
    assert len(lab.tier_ports(Tier.INTRA_RACK)) == 4
    assert len(lab.tier_ports(Tier.INTER_RACK)) == 4
    assert len(lab.tier_ports(Tier.SPINE)) == 4
    up = lab.egress[PortRef("leaf2", 4)]
    assert (up.peer, up.peer_port) == ("spine2", PortRef("spine2", 2))
    assert lab.egress[PortRef("leaf1", 2)].peer == "h12"


def test_one_spine_path_per_spine(lab: Topology) -> None:
    paths = lab.spine_paths("leaf1", "leaf2")
    assert [str(p) for p in paths] == ["leaf1>spine1>leaf2", "leaf1>spine2>leaf2"]
    p = paths[1]
    assert (p.up, p.down) == (PortRef("leaf1", 4), PortRef("spine2", 2))
    assert lab.spine_paths("leaf1", "leaf1") == ()
    assert lab.port_towards("spine1", "leaf2") == PortRef("spine1", 2)
    assert lab.port_towards("leaf2", "h22") == PortRef("leaf2", 2)


def test_a_link_marked_down_takes_its_paths_away(lab: Topology) -> None:
    link = LinkId.of(PortRef("spine2", 2), PortRef("leaf2", 4))
    down = lab.with_link_status(link, LinkStatus.DOWN)
    assert [p.spine for p in down.candidate_paths("leaf1", "leaf2")] == ["spine1"]
    assert [p.spine for p in down.candidate_paths("leaf2", "leaf1")] == ["spine1"]
    # the original is unchanged, and marking it up again restores the path
    assert len(lab.candidate_paths("leaf1", "leaf2")) == 2
    assert down.link_status(link) is LinkStatus.DOWN
    up = down.with_link_status(link, LinkStatus.UP)
    assert len(up.candidate_paths("leaf1", "leaf2")) == 2
    assert up.unusable_links() == frozenset()


def test_many_spines() -> None:
    topo = Topology(leaf_spine(spines=8, leaves=3, hosts_per_leaf=1))
    assert len(topo.spine_paths("leaf3", "leaf1")) == 8
    assert topo.leaf_of("h31") == "leaf3"


def test_names_that_are_not_there(lab: Topology) -> None:
    with pytest.raises(TopologyError, match=r"^no host named 'h211'; did you mean 'h21'\?$"):
        lab.host("h211")
    with pytest.raises(TopologyError, match=r"^no host named 'zz'$"):
        lab.host("zz")
    with pytest.raises(TopologyError, match=r"no leaf named 'leaf9'"):
        lab.spine_paths("leaf1", "leaf9")
    with pytest.raises(TopologyError, match="'leaf1' has no link to 'leaf2'"):
        lab.port_towards("leaf1", "leaf2")
    with pytest.raises(TopologyError, match="no link"):
        lab.with_link_status(LinkId.of(PortRef("x", 1), PortRef("y", 1)), LinkStatus.DOWN)


# -- the audit's comparison ----------------------------------------------------------------


def every_fabric_port(topo: Topology) -> tuple[PortRef, ...]:
    return tuple(ref for ref, p in topo.egress.items() if p.link is not None)


def test_audit_all_wired_as_modelled(lab: Topology) -> None:
    sent = every_fabric_port(lab)
    seen = tuple(ProbeSeen(ref, lab.egress[ref].peer_port) for ref in sent)  # type: ignore[arg-type]
    findings = compare_wiring(lab, AuditRound(sent, seen))
    assert set(findings.links) == set(lab.links)
    assert {v.status for v in findings.links.values()} == {LinkStatus.UP}
    assert findings.unexpected == ()


def test_audit_one_direction_lost_is_down(lab: Topology) -> None:
    sent = every_fabric_port(lab)
    seen = tuple(
        ProbeSeen(ref, lab.egress[ref].peer_port)  # type: ignore[arg-type]
        for ref in sent
        if ref != PortRef("spine1", 1)
    )
    findings = compare_wiring(lab, AuditRound(sent, seen))
    link = LinkId.of(PortRef("leaf1", 3), PortRef("spine1", 1))
    assert findings.links[link].status is LinkStatus.DOWN
    assert findings.links[link].detail == "no probe from spine1:1 reached leaf1:3"
    assert sum(v.status is LinkStatus.UP for v in findings.links.values()) == 3


def test_audit_swapped_cables_are_miswired(lab: Topology) -> None:
    # leaf1's uplinks are plugged into each other's spine ports
    round_ = AuditRound(
        (PortRef("leaf1", 3), PortRef("leaf1", 4)),
        (
            ProbeSeen(PortRef("leaf1", 3), PortRef("spine2", 1)),
            ProbeSeen(PortRef("leaf1", 4), PortRef("spine1", 1)),
        ),
    )
    findings = compare_wiring(lab, round_)
    assert len(findings.links) == 2
    verdict = findings.links[LinkId.of(PortRef("leaf1", 3), PortRef("spine1", 1))]
    assert verdict.status is LinkStatus.MISWIRED
    assert verdict.detail == "leaf1:3 reaches spine2:1; the model says spine1:1"


def test_audit_reports_what_the_model_does_not_know(lab: Topology) -> None:
    round_ = AuditRound(
        (PortRef("leaf1", 7),),
        (
            ProbeSeen(PortRef("leaf1", 7), PortRef("spine3", 1)),
            ProbeSeen(PortRef("leaf2", 9), PortRef("spine1", 2)),
        ),
    )
    findings = compare_wiring(lab, round_)
    assert findings.links == {}
    assert findings.unexpected == (
        "leaf1:7 reaches spine3:1, which the model does not wire to it",
        "a probe from leaf2:9 that was not sent arrived at spine1:2",
    )


def test_audit_ignores_host_ports_and_unprobed_links(lab: Topology) -> None:
    findings = compare_wiring(lab, AuditRound((PortRef("leaf1", 1),), ()))
    assert findings.links == {} and findings.unexpected == ()
