"""Roles, readiness and refusals (pure), and the ledger while a leaf is unreachable."""

from __future__ import annotations

import asyncio
from pathlib import Path

from controller.config import parse_config
from controller.service.service import Service, ServiceOptions
from controller.service.southbound import ledger
from controller.service.southbound.pins import PinMeta
from controller.service.southbound.readiness import SwitchState, overall_role, refusal, switch_state
from controller.service.southbound.switches import Pipeline

FABRIC = Path(__file__).resolve().parents[2] / "topologies" / "lab-2x2.yaml"
S = SwitchState


def test_a_switch_is_ready_once_sampled_after_its_provisioning() -> None:
    def state(**kw: object) -> SwitchState:
        base: dict[str, object] = dict(up=True, primary=True, tried=1, provisioned_at=10.0,
                                       sampled_at=10.1, now=10.2, grace_s=1.0)  # fmt: skip
        return switch_state(**{**base, **kw})  # type: ignore[arg-type]

    assert state() is S.PRIMARY
    assert state(sampled_at=9.9) is S.PROVISIONING  # a sample of before: the old pipeline's
    assert state(sampled_at=None) is S.PROVISIONING
    assert state(sampled_at=None, now=11.1) is S.PRIMARY  # no sample in the grace: stale
    assert state(sampled_at=None, polled=False) is S.PRIMARY  # nothing to sample
    assert state(provisioned_at=None) is S.PROVISIONING
    assert state(primary=False) is S.BACKUP
    assert state(up=False) is S.DOWN
    assert state(up=False, tried=0) is S.CONNECTING


def test_one_switch_down_leaves_a_primary_primary() -> None:
    assert overall_role({"a": S.PRIMARY, "b": S.DOWN}) == "primary"
    assert overall_role({"a": S.PROVISIONING, "b": S.CONNECTING}) == "primary"
    assert overall_role({"a": S.BACKUP, "b": S.DOWN}) == "backup"
    assert overall_role({"a": S.BACKUP, "b": S.PRIMARY}) == "mixed"
    assert overall_role({"a": S.DOWN, "b": S.CONNECTING}) == "disconnected"


def test_requests_are_refused_only_for_the_switches_they_need() -> None:
    states = {"leaf1": S.PRIMARY, "leaf2": S.BACKUP, "spine1": S.PROVISIONING, "spine2": S.DOWN}
    assert refusal(states, ["leaf1", "spine2"]) is None
    why = refusal(states, ["leaf1", "leaf2", "spine1"])
    assert why is not None and "the backup for leaf2" in why
    why = refusal(states, ["leaf1", "spine1"])
    assert why is not None and "spine1 (being provisioned" in why
    why = refusal(dict.fromkeys(states, S.DOWN), ["leaf1"])
    assert why is not None and "no switch is reachable" in why
    why = refusal({**dict.fromkeys(states, S.DOWN), "leaf2": S.CONNECTING}, [])
    assert why is not None and "connecting to leaf2" in why


def test_a_ledger_an_unreachable_leaf_missed_is_written_again(
    pipeline: tuple[Path, Path],
) -> None:
    """The enforcer books a leaf's ledger only once written: the next poll tries again."""
    config = parse_config(FABRIC.read_text(), str(FABRIC))
    service = Service(ServiceOptions(config, Pipeline(pipeline[0], pipeline[1].read_bytes())))
    meta = PinMeta("x-1", "t", "h11", "h21", 1, 0.0, 1e12, "spine1")
    new = ledger.ledgers([((2, "spine1"), ledger.Record(meta, 40000))])
    assert asyncio.run(service.enforcer.write_ledger(service.switches.links["leaf1"], new)) is False
    assert service.enforcer.ledgers == {}
    assert ledger.changed({}, new) == {(2, "spine1")}
    assert ledger.decode(new[2, "spine1"]) == [ledger.Record(meta, 40000)]
    assert ledger.decode(b"") == [] and ledger.decode(b"{}") is None
