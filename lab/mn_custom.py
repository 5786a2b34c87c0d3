"""Mininet ``--custom`` file: kvfabric's switch, host and topologies for ``mn``.

Run it with the project's Python, which can import kvfabric::

    sudo .venv/bin/python /usr/bin/mn --custom lab/mn_custom.py \\
        --switch p4,program=p4/kv_fabric.p4 --host lab --controller none \\
        --topo leafspine,spines=2,leaves=2,hosts_per_leaf=2,bw=20,queue=100

    sudo .venv/bin/python /usr/bin/mn --custom lab/mn_custom.py \\
        --switch p4 --host lab --controller none --topo fabric,topologies/lab-2x2.yaml

``--switch bmv2`` runs BMv2's simple_switch_grpc instead (the VM lab). The
topologies carry their own link class (:class:`~lab.links.ShapedLink`: htb, MTU
9000, offloads off) because mn 2.3.0 drops a custom file's ``links`` dictionary (a
missing comma in ``setCustom``), so ``--link`` cannot name it. P4Runtime ports are
taken from the fabric file for ``fabric``, and are free ports for ``leafspine``:
``net`` in the CLI does not show them, the switches' logs (``/tmp/kvl*-logs``) do.

Beware: when ``mn`` fails or is interrupted it runs ``mn -c``, a machine-wide
cleanup that kills every Mininet shell and every process named ``ping`` or
``controller``. On a shared machine prefer ``kvfabric experiment`` or
:class:`lab.net.Lab`, which stop only what they started.
"""

from __future__ import annotations

from experiment.fabric import lab_fabric
from lab.links import ShapedLink
from lab.nodes import Bmv2Switch, LabHost, P4Switch
from lab.topo import DEFAULT_QUEUE, FabricTopo


def leafspine(
    spines: int = 2,
    leaves: int = 2,
    hosts_per_leaf: int = 2,
    bw: float = 20.0,
    queue: int = DEFAULT_QUEUE,
) -> FabricTopo:
    """A regular leaf-spine fabric at ``bw`` Mbit/s (controller.config.generate's plan)."""
    from controller.config.generate import leaf_spine

    fabric = leaf_spine(
        int(spines), int(leaves), int(hosts_per_leaf), link_bps=round(float(bw) * 1e6)
    )
    return FabricTopo(lab_fabric(fabric), queue_packets=int(queue), link_cls=ShapedLink)


def fabric(path: str, queue: int = DEFAULT_QUEUE) -> FabricTopo:
    """The fabric of a fabric file (the controller's YAML, or tutorials' topology.json)."""
    from controller.config import load_config

    return FabricTopo(
        lab_fabric(load_config(path), fresh_ports=False),
        queue_packets=int(queue),
        link_cls=ShapedLink,
    )


topos = {"leafspine": leafspine, "fabric": fabric}
switches = {"p4": P4Switch, "bmv2": Bmv2Switch}
hosts = {"lab": LabHost}
