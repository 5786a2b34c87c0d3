"""The fabric a lab run actually builds: lab rates, free ports, written for the controller.

The controller and the lab read the same fabric file, but a run may change it:

- a fabric at real rates (the design's 400 Gb/s) is scaled to lab rates, every
  capacity by the same factor, so that utilisations and their ratios are unchanged;
- a scenario may slow single cables down (``shaping.links``: the asymmetric case);
- P4Runtime and API ports are replaced by free ones, so a run never collides with
  another switch or service on the machine.

:func:`lab_fabric` returns the changed model and :func:`write_fabric` writes it in
the file format, for the controller to load.
"""

from __future__ import annotations

import contextlib
import dataclasses
import socket
from collections.abc import Iterable
from pathlib import Path

from controller.config import FabricConfig, LinkConfig, Role
from controller.config.generate import leaf_spine, to_yaml
from experiment.errors import FabricError
from experiment.scenario import FabricParams, LinkRate


def fabric_from_params(params: FabricParams, name: str) -> FabricConfig:
    """A regular leaf-spine fabric from a scenario's ``fabric`` section."""
    try:
        return leaf_spine(
            params.spines,
            params.leaves,
            params.hosts_per_leaf,
            link_bps=params.link_bps,
            host_bps=params.host_bps,
            prefill_leaves=params.prefill_leaves,
            name=name,
        )
    except ValueError as exc:
        raise FabricError(f"cannot build the fabric: {exc}") from None


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports that are free on 127.0.0.1 right now."""
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(count):
            s = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            s.bind(("127.0.0.1", 0))
            ports.append(int(s.getsockname()[1]))
        return ports


def lab_fabric(
    fabric: FabricConfig,
    *,
    link_bps: int | None = None,
    link_rates: Iterable[LinkRate] = (),
    fresh_ports: bool = True,
) -> FabricConfig:
    """``fabric`` as the lab runs it (see the module docstring).

    ``link_bps`` scales every capacity so that the fastest leaf-spine cable runs at
    ``link_bps``; None keeps the rates. ``link_rates`` then sets single cables.
    """
    if link_bps is not None:
        fastest = max((link.capacity_bps for link in fabric.links), default=0)
        if fastest <= 0:
            raise FabricError(f"fabric {fabric.name!r} has no links to scale")
        factor = link_bps / fastest
        fabric = dataclasses.replace(
            fabric,
            links=tuple(
                dataclasses.replace(link, capacity_bps=max(1, round(link.capacity_bps * factor)))
                for link in fabric.links
            ),
            hosts=tuple(
                dataclasses.replace(h, capacity_bps=round(h.capacity_bps * factor))
                for h in fabric.hosts
            ),
        )
    for rate in link_rates:
        fabric = _set_cable_rate(fabric, rate)
    if fresh_ports:
        ports = free_ports(len(fabric.switches) + 1)
        switches = tuple(
            dataclasses.replace(sw, p4runtime=f"127.0.0.1:{port}")
            for sw, port in zip(fabric.switches, ports, strict=False)
        )
        controller = fabric.controller
        api = dataclasses.replace(controller.api, host="127.0.0.1", port=ports[-1])
        fabric = dataclasses.replace(
            fabric, switches=switches, controller=dataclasses.replace(controller, api=api)
        )
    return fabric


def _set_cable_rate(fabric: FabricConfig, rate: LinkRate) -> FabricConfig:
    names = {s.name: s.role for s in fabric.switches}
    if names.get(rate.leaf) is not Role.LEAF or names.get(rate.spine) is not Role.SPINE:
        raise FabricError(
            f"shaping.links: fabric {fabric.name!r} has no leaf {rate.leaf!r} and spine "
            f"{rate.spine!r} (leaves: {', '.join(s.name for s in fabric.leaves)}; spines: "
            f"{', '.join(s.name for s in fabric.spines)})"
        )
    links: list[LinkConfig] = []
    found = False
    for link in fabric.links:
        if {link.a.switch, link.b.switch} == {rate.leaf, rate.spine}:
            links.append(dataclasses.replace(link, capacity_bps=rate.bps))
            found = True
        else:
            links.append(link)
    if not found:
        raise FabricError(f"shaping.links: no cable between {rate.leaf} and {rate.spine}")
    return dataclasses.replace(fabric, links=tuple(links))


def write_fabric(fabric: FabricConfig, path: Path) -> Path:
    """Write ``fabric`` in the file format (what the controller loads)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(to_yaml(fabric), encoding="utf-8")
    return path
