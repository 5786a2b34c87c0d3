"""RuntimeState: every runtime object of a loaded pipeline, by control-plane name.

The interpreter builds one RuntimeState per pipeline load (adding tables,
profiles and externs as it compiles the program); the STF runner and the
P4Runtime server find objects in it by name.  A name is resolved exactly or
as a unique dotted suffix (``ipv4_lpm`` finds ``MyIngress.ipv4_lpm``); a
miss raises ``NOT_FOUND`` with the closest names, an ambiguous suffix
``INVALID_ARGUMENT`` with every candidate.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from kvfabric.suggest import closest
from softswitch.errors import RuntimeConfigError
from softswitch.runtime.externs import Counter, DirectCounter, DirectMeter, Meter, Register
from softswitch.runtime.hashing import Crc
from softswitch.runtime.pre import Pre
from softswitch.runtime.profiles import ActionProfile
from softswitch.runtime.tables import Table, TableEntry
from softswitch.runtime.tm import TrafficManager
from softswitch.runtime.valuesets import ValueSet

T = TypeVar("T")

KINDS = (
    "table",
    "action_profile",
    "counter",
    "direct_counter",
    "meter",
    "direct_meter",
    "register",
    "crc",
    "value_set",
)


def resolve(kind: str, objects: Mapping[str, T], name: str) -> T:
    """The object named ``name`` exactly, or by a unique dotted suffix."""
    obj = objects.get(name)
    if obj is not None:
        return obj
    suffix = "." + name
    matches = [full for full in objects if full.endswith(suffix)]
    if len(matches) == 1:
        return objects[matches[0]]
    label = kind.replace("_", " ")
    if matches:
        raise RuntimeConfigError(
            "INVALID_ARGUMENT",
            f"{label} name '{name}' is ambiguous: it could be "
            + ", ".join(f"'{m}'" for m in sorted(matches)),
        )
    candidates = list(objects)
    short = {full.rsplit(".", 1)[-1]: full for full in candidates}
    best = closest(name, candidates)
    if best is None:
        local = closest(name, short)
        best = short[local] if local is not None else None
    hint = f"; did you mean {best!r}?" if best is not None else ""
    raise RuntimeConfigError("NOT_FOUND", f"no {label} named '{name}'{hint}")


class RuntimeState:
    """All the runtime objects of one pipeline, and its clock."""

    def __init__(self) -> None:
        self.tables: dict[str, Table] = {}
        self.action_profiles: dict[str, ActionProfile] = {}
        self.counters: dict[str, Counter] = {}
        self.direct_counters: dict[str, DirectCounter] = {}
        self.meters: dict[str, Meter] = {}
        self.direct_meters: dict[str, DirectMeter] = {}
        self.registers: dict[str, Register] = {}
        self.crcs: dict[str, Crc] = {}  # custom CRCs of hash calculations, by name
        self.value_sets: dict[str, ValueSet] = {}
        self.pre = Pre()
        self.tm = TrafficManager()
        self.now_ns = 0
        self._idle_tables: list[Table] = []

    # -- building ------------------------------------------------------------

    def add_table(self, table: Table) -> Table:
        self._add("table", self.tables, table.name, table)
        if table.spec.supports_idle_timeout:
            self._idle_tables.append(table)
            table.now_ns = self.now_ns
        return table

    def add_action_profile(self, profile: ActionProfile) -> ActionProfile:
        return self._add("action_profile", self.action_profiles, profile.name, profile)

    def add_counter(self, counter: Counter) -> Counter:
        return self._add("counter", self.counters, counter.name, counter)

    def add_direct_counter(self, counter: DirectCounter) -> DirectCounter:
        return self._add("direct_counter", self.direct_counters, counter.name, counter)

    def add_meter(self, meter: Meter) -> Meter:
        return self._add("meter", self.meters, meter.name, meter)

    def add_direct_meter(self, meter: DirectMeter) -> DirectMeter:
        return self._add("direct_meter", self.direct_meters, meter.name, meter)

    def add_register(self, register: Register) -> Register:
        return self._add("register", self.registers, register.name, register)

    def add_crc(self, name: str, crc: Crc) -> Crc:
        return self._add("crc", self.crcs, name, crc)

    def add_value_set(self, value_set: ValueSet) -> ValueSet:
        return self._add("value_set", self.value_sets, value_set.name, value_set)

    @staticmethod
    def _add(kind: str, objects: dict[str, T], name: str, obj: T) -> T:
        if name in objects:
            raise RuntimeConfigError(
                "ALREADY_EXISTS", f"two {kind.replace('_', ' ')}s named '{name}'"
            )
        objects[name] = obj
        return obj

    # -- finding -------------------------------------------------------------

    def _objects(self, kind: str) -> Mapping[str, object]:
        by_kind: dict[str, Mapping[str, object]] = {
            "table": self.tables,
            "action_profile": self.action_profiles,
            "counter": self.counters,
            "direct_counter": self.direct_counters,
            "meter": self.meters,
            "direct_meter": self.direct_meters,
            "register": self.registers,
            "crc": self.crcs,
            "value_set": self.value_sets,
        }
        objects = by_kind.get(kind)
        if objects is None:
            raise RuntimeConfigError("INVALID_ARGUMENT", f"unknown kind of object '{kind}'")
        return objects

    def lookup(self, kind: str, name: str) -> object:
        """The object of ``kind`` (one of KINDS) named ``name`` exactly or by suffix."""
        return resolve(kind, self._objects(kind), name)

    def table(self, name: str) -> Table:
        return resolve("table", self.tables, name)

    def action_profile(self, name: str) -> ActionProfile:
        return resolve("action_profile", self.action_profiles, name)

    def counter(self, name: str) -> Counter:
        return resolve("counter", self.counters, name)

    def direct_counter(self, name: str) -> DirectCounter:
        return resolve("direct_counter", self.direct_counters, name)

    def meter(self, name: str) -> Meter:
        return resolve("meter", self.meters, name)

    def direct_meter(self, name: str) -> DirectMeter:
        return resolve("direct_meter", self.direct_meters, name)

    def register(self, name: str) -> Register:
        return resolve("register", self.registers, name)

    def crc(self, name: str) -> Crc:
        return resolve("crc", self.crcs, name)

    def value_set(self, name: str) -> ValueSet:
        return resolve("value_set", self.value_sets, name)

    # -- time ------------------------------------------------------------------

    def set_time(self, now_ns: int) -> None:
        """Advance the clock that idle-timeout bookkeeping reads."""
        self.now_ns = now_ns
        for table in self._idle_tables:
            table.now_ns = now_ns

    def expired_entries(self, now_ns: int) -> list[tuple[Table, list[TableEntry]]]:
        """For each table with idle timeout, its entries that just expired."""
        out: list[tuple[Table, list[TableEntry]]] = []
        for table in self._idle_tables:
            expired = table.expired_entries(now_ns)
            if expired:
                out.append((table, expired))
        return out

    def reset(self) -> None:
        """Clear entries, members, groups, value sets, counters, registers, meters, PRE, queues."""
        for table in self.tables.values():
            table.clear()
        for profile in self.action_profiles.values():
            profile.clear()
        for value_set in self.value_sets.values():
            value_set.clear()
        for counter in self.counters.values():
            counter.reset()
        for register in self.registers.values():
            register.reset()
        for meter in self.meters.values():
            meter.reset()
        self.pre.reset()
        self.tm.reset()
