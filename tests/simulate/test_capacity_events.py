"""A scenario's capacity events reach the kv-aware engine as the switches report them.

Two spines at 10 Gb/s; spine 1 carries 6 Gb/s of background, so the engine sends each
transfer alone up spine 2 (10 Gb/s free against 4). At 2.5 s both of spine 1's cables
are re-provisioned at 40 Gb/s: the switches report the new speed (the driver builds
their gNMI reading at the next audit round), spine 1 has 34 Gb/s free, and the
transfers after it go there, 3.4 times as fast. An engine that never learned the
capacity would keep them on spine 2.
"""

from __future__ import annotations

from typing import Any

import pytest

from experiment.scenario import Tool, parse_scenario
from simulator.run import Simulation, simulate

REPROVISIONED = """\
name: reprovisioned
fabric: {spines: 2, leaves: 2, hosts_per_leaf: 2, link_rate: 10Gbps, host_rate: 40Gbps,
         prefill_leaves: 1}
transfer: {bytes: 125MB}
arrivals:
  - {kind: sequential, count: 6, gap: 1s}
background:
  - {spine: spine1, load: 60%, protocol: udp}
events:
  - {at: 2500ms, link: {leaf: leaf1, spine: spine1}, capacity: 40Gbps}
  - {at: 2500ms, link: {leaf: leaf2, spine: spine1}, capacity: 40Gbps}
run: {warmup: 1s, transfer_timeout: 10s}
simulation:
  controller:
    selection: {max_slices: 1}
"""


@pytest.fixture(scope="module")
def kv_aware() -> dict[str, Any]:
    sim = Simulation(parse_scenario(REPROVISIONED, "r.yaml", Tool.SIMULATE), ("kv-aware",))
    mode: dict[str, Any] = simulate(sim)["modes"]["kv-aware"]
    return mode


def test_transfers_after_a_reprovisioned_cable_use_it(kv_aware: dict[str, Any]) -> None:
    assert kv_aware["failed"] == 0
    by_index = sorted(kv_aware["transfers"], key=lambda t: t["index"])
    assert [t["spine"] for t in by_index] == ["spine2"] * 3 + ["spine1"] * 3
    fct = kv_aware["fct_samples_ms"]
    before, after = fct[:3], fct[3:]
    # 125 MB: 100 ms at spine 2's 10 Gb/s, 29 ms at the 34 Gb/s spine 1 has left
    assert before == pytest.approx([100.0] * 3, rel=0.02)
    assert after == pytest.approx([1e3 * 125e6 * 8 / 34e9] * 3, rel=0.05)
