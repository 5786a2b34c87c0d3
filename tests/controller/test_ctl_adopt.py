"""Adopting a transfer another controller placed: the engine counts its bytes on its
path and withholds its tag port until it is released, through its own entry points."""

from __future__ import annotations

from controller.engine import Demand
from tests.controller.ctl_harness import MB, FakeClockEngine


def test_an_adopted_transfer_loads_its_spine_and_holds_its_tag_until_released() -> None:
    f = FakeClockEngine(spines=2)
    f.warm()
    engine = f.engine
    first = engine.settings.kv_class.tag_port_first
    adoption, updates = engine.adopt("h11", "h21", "spine1", 500 * MB, tag_port=first, now=f.now)
    assert updates == []
    assert adoption.tag_reserved and engine.tags.in_use == 1
    assert f.inflight("leaf1:3") == 500 * MB  # leaf1's uplink to spine1
    decision = f.decide("h12", "h22")
    assert f.spine(decision) == "spine2"  # not onto the adopted transfer's spine
    forced, _ = engine.decide(Demand("h11", "h21", MB, spine="spine1"), f.now)
    assert forced.tag is not None and forced.tag.src_port == first + 1  # first is withheld
    assert engine.release(adoption, f.now) == []
    assert f.inflight("leaf1:3") == MB
    assert engine.tags.in_use == 2  # the decisions above hold theirs; the adopted one is back


def test_an_adopted_port_already_in_use_is_not_given_back_twice() -> None:
    f = FakeClockEngine(spines=2)
    f.warm()
    engine = f.engine
    decision = f.decide("h11", "h21")
    assert decision.tag is not None
    port = decision.tag.src_port
    adoption, _ = engine.adopt("h11", "h21", "spine1", MB, tag_port=port, now=f.now)
    assert not adoption.tag_reserved
    held = engine.tags.in_use
    engine.release(adoption, f.now)
    assert engine.tags.in_use == held


def test_hosts_or_spines_unknown_here_count_nothing() -> None:
    f = FakeClockEngine(spines=2)
    engine = f.engine
    adoption, _ = engine.adopt("h11", "h99", "spine1", MB, tag_port=1, now=f.now)
    assert adoption.contributions == ()
    adoption, _ = engine.adopt("h11", "h21", "spine9", MB, tag_port=1, now=f.now)
    assert adoption.contributions == ()
