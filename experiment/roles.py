"""Which hosts of a fabric send KV transfers, receive them and carry background traffic.

A scenario may name the hosts of each role (``hosts: {senders, receivers,
background}``); what it leaves out follows the fabric's pools: background hosts are
the ``other`` pool, senders the ``prefill`` pool and receivers the ``decode`` pool,
minus the background hosts. Roles are checked against the fabric once, with errors
that name the scenario file and key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from controller.config import FabricConfig, Pool
from experiment.errors import ScenarioError
from experiment.scenario import Scenario
from kvfabric.suggest import did_you_mean


@dataclass(frozen=True, slots=True)
class Roles:
    """Host names per role, and the leaf of every host."""

    senders: tuple[str, ...]
    receivers: tuple[str, ...]
    background: tuple[str, ...]
    leaf_of: Mapping[str, str]


def resolve_roles(scenario: Scenario, fabric: FabricConfig) -> Roles:
    """The scenario's host roles on ``fabric``; a :class:`ScenarioError` if they do not fit."""
    names = [h.name for h in fabric.hosts]
    given = scenario.hosts

    def check(key: str, listed: Sequence[str]) -> tuple[str, ...]:
        for name in listed:
            if name not in names:
                raise ScenarioError(
                    scenario.source,
                    f"hosts.{key}",
                    f"fabric {fabric.name!r} has no host {name!r}{did_you_mean(name, names)}",
                )
        return tuple(listed)

    def pool(p: Pool, exclude: Sequence[str]) -> tuple[str, ...]:
        return tuple(h.name for h in fabric.hosts if h.pool is p and h.name not in exclude)

    background = (
        check("background", given.background)
        if given.background is not None
        else pool(Pool.OTHER, ())
    )
    senders = (
        check("senders", given.senders)
        if given.senders is not None
        else pool(Pool.PREFILL, background)
    )
    receivers = (
        check("receivers", given.receivers)
        if given.receivers is not None
        else pool(Pool.DECODE, background)
    )
    leaf_of = {h.name: h.leaf for h in fabric.hosts}
    for key, hosts in (("senders", senders), ("receivers", receivers)):
        if not hosts:
            raise ScenarioError(
                scenario.source,
                f"hosts.{key}",
                f"no KV {key} in fabric {fabric.name!r}: list them, or give the fabric "
                f"hosts of pool {'prefill' if key == 'senders' else 'decode'}",
            )
    if not any(leaf_of[s] != leaf_of[r] for s in senders for r in receivers):
        raise ScenarioError(
            scenario.source, "hosts", "no sender and receiver sit on different leaves"
        )
    if scenario.background and not background:
        raise ScenarioError(
            scenario.source,
            "background",
            "background traffic needs hosts: list them under hosts.background, or give "
            "the fabric hosts of pool 'other'",
        )
    return Roles(senders, receivers, background, leaf_of)
