"""A Mininet leaf-spine fabric with the real controller on it, for the lab's root tests.

:func:`controlled_lab` builds the fabric (2 leaves, 2 hosts a leaf, 20 Mb/s links,
10-packet queues), starts ``kvfabric controller`` on it, waits until it is ready,
and on exit stops everything and checks that nothing the lab created is left.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from controller.config import FabricConfig
from controller.config.generate import leaf_spine
from experiment.fabric import lab_fabric, write_fabric
from lab.control import ControllerProcess, HttpControl
from lab.net import Lab, leftovers
from lab.topo import FabricTopo


@dataclass
class Running:
    lab: Lab
    fabric: FabricConfig
    control: HttpControl
    log: Path | None = None


@contextmanager
def controlled_lab(
    out: Path,
    spines: int,
    *,
    transfer_log: bool = False,
    host_bps: int | None = None,
    queue_packets: int = 10,
) -> Iterator[Running]:
    """The fabric of ``spines`` spines under ``out`` and a ready controller; with
    ``transfer_log``, the controller writes its transfer log (``Running.log``).
    ``host_bps``: the hosts' links (default: the cables' 20 Mb/s)."""
    fabric = lab_fabric(leaf_spine(spines, 2, 2, link_bps=20_000_000, host_bps=host_bps))
    lab = Lab(FabricTopo(fabric, queue_packets=queue_packets), log_dir=out / "logs")
    lab.start()
    try:
        log = out / "logs" / "transfers.jsonl" if transfer_log else None
        fabric_file = write_fabric(fabric, out / "fabric.yaml")
        ControllerProcess(
            fabric_file, out / "logs" / "controller.log", lab.processes, transfer_log=log
        ).start()
        control = HttpControl.for_fabric(fabric)
        asyncio.run(control.ready(90))
        yield Running(lab, fabric, control, log)
    finally:
        lab.stop(check=False)
    assert lab.footprint is not None
    assert leftovers(lab.footprint, wait_s=0) == []
