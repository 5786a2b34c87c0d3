"""Room on the spines, measured: the isolated reference's choice, timeouts with room,
and ECMP's groups over the cables that are live."""

from __future__ import annotations

from controller.config.generate import leaf_spine
from experiment.ecmp import FLOWLET_STEP, EcmpOracle
from experiment.flows import FlowKey
from lab.room import CableIntfs, down_during, roomiest_spine, spines_with_room

MBPS = 1_000_000


def cables(spines: int = 3) -> dict[tuple[str, str], CableIntfs]:
    return {
        (leaf, f"spine{s}"): CableIntfs(f"{leaf}-s{s}", f"spine{s}-{leaf}", 20 * MBPS)
        for leaf in ("leaf1", "leaf2")
        for s in range(1, spines + 1)
    }


def rates(up: dict[int, float], down: dict[int, float] | None = None) -> dict[str, float]:
    """Bit/s on leaf1's uplinks (``up``) and on the spines' downlinks to leaf2 (``down``)."""
    out = {f"leaf1-s{s}": x * MBPS for s, x in up.items()}
    out.update({f"spine{s}-leaf2": x * MBPS for s, x in (down or {}).items()})
    return out


def test_isolated_takes_the_spine_with_most_measured_room():
    c = cables()
    # planned 80/50/20 on spine1..3, but a failure re-hashed it: spine3 is now the busy one
    measured = rates({1: 4, 2: 10, 3: 19})
    assert roomiest_spine(measured, c, "leaf1", "leaf2") == "spine1"
    # the downlink counts too: spine1's downlink to leaf2 is full
    assert roomiest_spine(rates({1: 4, 2: 10, 3: 19}, {1: 19.5}), c, "leaf1", "leaf2") == "spine2"
    # a dead cable is never room, however idle its counters look
    assert roomiest_spine(measured, c, "leaf1", "leaf2", {("leaf1", "spine1")}) == "spine2"
    everything = {("leaf1", f"spine{s}") for s in (1, 2, 3)}
    assert roomiest_spine(measured, c, "leaf1", "leaf2", everything) is None
    assert roomiest_spine({}, c, "leaf1", "leaf2") == "spine1"  # ties: first by name


def test_spines_with_room_during_a_window():
    c = cables()
    samples = [
        (1.0, rates({1: 19, 2: 19, 3: 2})),
        (2.0, rates({1: 19, 2: 8, 3: 2})),
        (3.0, rates({1: 19, 2: 8, 3: 19})),
    ]

    def room(window: tuple[float, float], **kw: object) -> tuple[str, ...] | None:
        return spines_with_room(samples, 1.0, c, "leaf1", "leaf2", window=window, **kw)  # type: ignore[arg-type]

    assert room((0.0, 1.0)) == ("spine3",)
    assert room((0.5, 2.0)) == ("spine3",)  # spine2 averages 67%: no room
    assert room((1.5, 3.0)) == ("spine2",)  # spine3 averages 52%
    assert room((0.0, 3.0), down={("leaf1", "spine3")}) == ()
    assert room((0.0, 3.0), threshold=0.99) == ("spine1", "spine2", "spine3")
    assert room((10.0, 20.0)) is None  # nothing measured then


def test_cables_down_during_a_window():
    log = [(5.0, ("leaf1", "spine3"), False), (9.0, ("leaf1", "spine3"), True)]
    assert down_during(log, (0.0, 4.0)) == set()
    assert down_during(log, (0.0, 6.0)) == {("leaf1", "spine3")}
    assert down_during(log, (6.0, 8.0)) == {("leaf1", "spine3")}  # down before, still down
    assert down_during(log, (9.5, 12.0)) == set()


def test_ecmp_groups_rehash_over_the_live_members():
    """A dead cable takes its spine out of both leaves' groups, and the rest re-hash."""
    from tests.p4 import fabric_model

    fabric = leaf_spine(3, 2, 2)
    live = EcmpOracle(fabric, down={("leaf1", "spine3")})
    assert live.group("leaf1", "leaf2") == ["spine1", "spine2"]
    assert live.group("leaf2", "leaf1") == ["spine1", "spine2"]  # towards leaf1: no spine3
    assert EcmpOracle(fabric).group("leaf2", "leaf1") == ["spine1", "spine2", "spine3"]
    moved = 0
    for sport in range(40000, 40200):
        key = FlowKey("h11", "h21", "tcp", sport, 7000)
        flow = fabric_model.Flow("10.0.1.1", "10.0.2.1", 6, sport, 7000)
        for salt in (0, FLOWLET_STEP):
            port = fabric_model.ecmp_port(flow, [3, 4], salt)  # leaf1's uplinks to spine1, spine2
            assert live.spine(key, salt) == f"spine{port - 2}"
        moved += live.spine(key) != EcmpOracle(fabric).spine(key)
    # not only the flows of spine3 move: a third of all, and about half of the others
    assert moved > 100
