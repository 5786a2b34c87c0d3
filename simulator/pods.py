"""Pods and superspines: the optional third tier of a simulated fabric.

A scenario's ``fabric`` with ``pods: P`` and ``superspines: M`` describes ``P`` copies
of the leaf-spine fabric its other keys give (``leaves`` and ``spines`` per pod),
joined by ``M`` superspines. The fabric is the controller's own
:func:`~controller.config.generate.leaf_spine` of ``P * leaves`` leaves and
``P * spines`` spines with the cables between pods taken out, plus the superspines:

- pod ``p`` (from 1) holds leaves ``(p-1)*leaves + 1 .. p*leaves`` and spines
  ``(p-1)*spines + 1 .. p*spines``, so names, addresses and pools are
  ``leaf_spine``'s: the first ``prefill_leaves`` leaves (pod 1 first) are prefill racks;
- every spine reaches every superspine over ``spine_uplinks / superspines`` cables of
  ``superspine_rate`` (default: one cable at ``link_rate``), bundled into one link per
  (spine, superspine) as a leaf's uplinks are: the flow model cannot tell a bundle
  from cables hashed evenly;
- ports: a spine's uplink to superspine ``k`` is its port ``P * leaves + k`` (after its
  leaf ports), and superspine ``k``'s port
  ``s`` goes to spine ``s``.
"""

from __future__ import annotations

import dataclasses

from controller.config import FabricConfig, LinkConfig, LinkEnd, Role, SwitchConfig
from experiment.scenario import FabricParams

BASE_PORT = 50000
"""As ``leaf_spine``'s: P4Runtime addresses are 127.0.0.1:(BASE_PORT + device id)."""


def flattened(params: FabricParams) -> FabricParams:
    """The leaf-spine plan of every pod's leaves and spines together."""
    return dataclasses.replace(
        params, leaves=params.leaves * params.pods, spines=params.spines * params.pods
    )


def pod_of(switch: str, params: FabricParams) -> int:
    """The pod (from 0) of ``leafN`` or ``spineN``."""
    if switch.startswith("leaf"):
        return (int(switch[4:]) - 1) // params.leaves
    return (int(switch[5:]) - 1) // params.spines


def within_pods(fabric: FabricConfig, params: FabricParams) -> FabricConfig:
    """``fabric`` (:func:`flattened`'s) without the leaf-spine cables between pods."""
    links = tuple(
        link
        for link in fabric.links
        if pod_of(link.a.switch, params) == pod_of(link.b.switch, params)
    )
    return dataclasses.replace(fabric, links=links)


def with_superspines(fabric: FabricConfig, params: FabricParams) -> FabricConfig:
    """``fabric`` with the superspines and their cables to every spine."""
    leaves, spines = len(fabric.leaves), len(fabric.spines)
    rate = (params.superspine_bps or params.link_bps) * params.spine_bundle
    switches = list(fabric.switches)
    links = list(fabric.links)
    for k in range(1, params.superspines + 1):
        device_id = leaves + spines + k
        name = f"superspine{k}"
        switches.append(
            SwitchConfig(name, Role.SUPERSPINE, f"127.0.0.1:{BASE_PORT + device_id}", device_id)
        )
        for s in range(1, spines + 1):
            links.append(LinkConfig(LinkEnd(f"spine{s}", leaves + k), LinkEnd(name, s), rate))
    return dataclasses.replace(fabric, switches=tuple(switches), links=tuple(links))
