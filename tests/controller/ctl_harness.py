"""A fake fabric around the decision engine: a clock, port loads and counter polls.

``FakeClockEngine`` owns an :class:`Engine` on a generated leaf-spine topology. Tests set the
background utilisation of egress ports (``set_load("leaf1:3", 0.75)``), advance the
clock by polling (``poll()``: every switch's cumulative counters grow by what those
loads send in the interval) and drive the engine through ``decide``/``complete``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from controller.config import (
    AlertSettings,
    ControllerSettings,
    FabricConfig,
    SafetySettings,
    SchedulingSettings,
    SelectionSettings,
    TelemetrySettings,
)
from controller.config.generate import leaf_spine
from controller.engine import Decision, Demand, Engine, SwitchReading, Update
from controller.engine.telemetry_math import PortCounters
from controller.topology import PortRef, Topology

MB = 1_000_000


def settings(**sections: dict[str, Any]) -> ControllerSettings:
    """Default controller settings with some fields of some sections replaced."""
    base = ControllerSettings()
    kinds = {
        "telemetry": TelemetrySettings,
        "selection": SelectionSettings,
        "safety": SafetySettings,
        "alerts": AlertSettings,
        "scheduling": SchedulingSettings,
    }
    changes: dict[str, Any] = {}
    for section, fields in sections.items():
        assert section in kinds, section
        changes[section] = replace(getattr(base, section), **fields)
    return replace(base, **changes)


class FakeClockEngine:
    """An engine on a generated fabric, with a fake clock and synthetic counters."""

    def __init__(
        self,
        spines: int = 2,
        leaves: int = 2,
        hosts_per_leaf: int = 2,
        link_bps: int = 20 * MB,
        controller: ControllerSettings | None = None,
        config: FabricConfig | None = None,
        **engine_kwargs: Any,
    ) -> None:
        """A generated leaf-spine fabric, or ``config`` if given."""
        self.config: FabricConfig = config or leaf_spine(
            spines, leaves, hosts_per_leaf, link_bps=link_bps, controller=controller
        )
        self.topology = Topology(self.config)
        self.now = 0.0
        self.engine = Engine(self.topology, now=0.0, **engine_kwargs)
        self.load: dict[PortRef, float] = {}
        self.kv_load: dict[PortRef, float] = {}
        self.queue: dict[PortRef, int] = {}
        self.sent: dict[PortRef, int] = {}
        self.kv_sent: dict[PortRef, int] = {}
        self.updates: list[Update] = []

    # -- the world ------------------------------------------------------------------

    def set_load(self, port: str, util: float, kv: float = 0.0) -> None:
        """Background utilisation (and KV-class utilisation) of egress port ``sw:N``."""
        ref = _ref(port)
        assert ref in self.topology.egress, port
        self.load[ref] = util
        self.kv_load[ref] = kv

    def set_queue(self, port: str, depth_packets: int) -> None:
        """Max queue depth the port reports at its next reads."""
        self.queue[_ref(port)] = depth_packets

    def poll(self, dt: float = 0.1, switches: list[str] | None = None) -> list[Update]:
        """Advance the clock by ``dt`` and feed one poll of ``switches`` (all by default)."""
        self.now = round(self.now + dt, 9)
        names = switches if switches is not None else [s.name for s in self.config.switches]
        out: list[Update] = []
        for sw in names:
            counters: dict[int, PortCounters] = {}
            for ref, port in self.topology.egress.items():
                if ref.switch != sw:
                    continue
                rate = port.capacity_bps / 8 * dt
                total = self.load.get(ref, 0.0) + self.kv_load.get(ref, 0.0)
                self.sent[ref] = self.sent.get(ref, 0) + round(rate * total)
                self.kv_sent[ref] = self.kv_sent.get(ref, 0) + round(
                    rate * self.kv_load.get(ref, 0.0)
                )
                counters[ref.port] = PortCounters(
                    self.sent[ref],
                    self.sent[ref] // 1500,
                    self.kv_sent[ref],
                    self.queue.get(ref, 0),
                )
            out += self.engine.telemetry(SwitchReading(sw, counters), self.now)
        self.updates += out
        return out

    def warm(self) -> None:
        """Two polls, so that every switch has a first utilisation sample."""
        self.poll(0.0 if self.now == 0.0 else 0.1)
        self.poll()

    def tick(self, dt: float = 0.0) -> list[Update]:
        """Advance the clock by ``dt`` without telemetry and tick the engine."""
        self.now = round(self.now + dt, 9)
        out = self.engine.tick(self.now)
        self.updates += out
        return out

    # -- the engine -------------------------------------------------------------------

    def decide(self, src: str, dst: str, size: int = 2 * MB) -> Decision:
        """Ask for a path at the current time; keeps the updates."""
        decision, updates = self.engine.decide(Demand(src, dst, size), self.now)
        self.updates += updates
        return decision

    def complete(self, decision: Decision, duration: float) -> list[Update]:
        """Report a completion at the current time."""
        out = self.engine.complete(decision.transfer_id, duration, self.now)
        self.updates += out
        return out

    def spine(self, decision: Decision) -> str | None:
        """The spine a decision pinned, or None."""
        return decision.path.spine if decision.path is not None else None

    def inflight(self, port: str) -> int:
        """The engine's in-flight bytes on egress port ``sw:N``."""
        return self.engine.table.inflight[self.engine.table.index[_ref(port)]]


def _ref(port: str) -> PortRef:
    switch, number = port.split(":")
    return PortRef(switch, int(number))
