"""RuntimeState: every runtime object of a loaded pipeline (STUB: signatures final)."""

from __future__ import annotations

from softswitch.runtime.externs import Counter, DirectCounter, DirectMeter, Meter, Register
from softswitch.runtime.pre import Pre
from softswitch.runtime.profiles import ActionProfile
from softswitch.runtime.tables import Table
from softswitch.runtime.tm import TrafficManager


class RuntimeState:
    def __init__(self) -> None:
        self.tables: dict[str, Table] = {}
        self.action_profiles: dict[str, ActionProfile] = {}
        self.counters: dict[str, Counter] = {}
        self.direct_counters: dict[str, DirectCounter] = {}
        self.meters: dict[str, Meter] = {}
        self.direct_meters: dict[str, DirectMeter] = {}
        self.registers: dict[str, Register] = {}
        self.pre = Pre()
        self.tm = TrafficManager()

    def lookup(self, kind: str, name: str) -> object:
        raise NotImplementedError

    def table(self, name: str) -> Table:
        raise NotImplementedError

    def action_profile(self, name: str) -> ActionProfile:
        raise NotImplementedError

    def counter(self, name: str) -> Counter:
        raise NotImplementedError

    def direct_counter(self, name: str) -> DirectCounter:
        raise NotImplementedError

    def meter(self, name: str) -> Meter:
        raise NotImplementedError

    def direct_meter(self, name: str) -> DirectMeter:
        raise NotImplementedError

    def register(self, name: str) -> Register:
        raise NotImplementedError

    def set_time(self, now_ns: int) -> None:
        raise NotImplementedError
