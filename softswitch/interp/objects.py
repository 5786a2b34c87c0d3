"""Build the runtime objects of a program (tables, profiles, externs, value sets).

Every :class:`ir.Table` becomes a :class:`softswitch.runtime.tables.Table`
with its program-declared initial entries, and every extern instance its
:mod:`softswitch.runtime.externs` object, all registered in a
:class:`RuntimeState` under their control-plane names.  The generated code
reaches them through the module namespace returned by :func:`build_objects`
(``T<uid>``, ``X<uid>``, ``VS<uid>``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from softswitch.errors import RuntimeConfigError, UnsupportedError
from softswitch.frontend import ir
from softswitch.frontend.types import bit_width
from softswitch.runtime import tables as rt
from softswitch.runtime.externs import (
    Counter,
    CounterUnit,
    DirectCounter,
    DirectMeter,
    Meter,
    MeterType,
    Register,
)
from softswitch.runtime.profiles import ActionProfile, ActionSelector
from softswitch.runtime.state import RuntimeState


class ValueSetState:
    """A parser ``value_set``: members are tuples of ``(value, mask)`` per field."""

    def __init__(self, name: str, size: int, widths: list[int]) -> None:
        self.name = name
        self.size = size
        self.widths = widths
        self.members: list[tuple[tuple[int, int], ...]] = []

    def add(self, values: tuple[int, ...], masks: tuple[int, ...] | None = None) -> None:
        """Add a member (exact values, or value/mask pairs)."""
        if len(self.members) >= self.size:
            raise RuntimeConfigError("RESOURCE_EXHAUSTED", f"value set '{self.name}' is full")
        if masks is None:
            masks = tuple((1 << w) - 1 for w in self.widths)
        self.members.append(tuple(zip(values, masks, strict=True)))

    def clear(self) -> None:
        """Remove every member."""
        self.members.clear()

    def match(self, keys: tuple[int, ...]) -> bool:
        """Whether ``keys`` matches a member."""
        for m in self.members:
            if all((k & mask) == (v & mask) for k, (v, mask) in zip(keys, m, strict=True)):
                return True
        return False


def action_spec(ref: ir.TableActionRef) -> rt.ActionSpec:
    """The runtime view of one action of a table."""
    params = tuple((v.name.split("_", 1)[1], bit_width(v.type)) for v in ref.action.cp_params)
    scope = {
        "": rt.ActionScope.TABLE_AND_DEFAULT,
        "tableonly": rt.ActionScope.TABLE_ONLY,
        "defaultonly": rt.ActionScope.DEFAULT_ONLY,
    }[ref.scope]
    return rt.ActionSpec(ref.action.name, params, scope)


def _match(ks: tuple[Any, ...], width: int) -> rt.Match | None:
    kind = ks[0]
    if kind == "dontcare":
        return None
    if kind == "exact":
        return rt.Exact(int(ks[1]))
    if kind == "ternary":
        return rt.Ternary(int(ks[1]), int(ks[2]))
    if kind == "lpm":
        return rt.Lpm(int(ks[1]), int(ks[2]))
    if kind == "range":
        return rt.Range(int(ks[1]), int(ks[2]))
    if kind == "optional":
        return rt.Optional(int(ks[1]))
    del width
    raise ValueError(kind)


# The registry of the runtime state each kind of extern instance goes into (an
# ActionSelector is an ActionProfile); other instances (hashes, checksums) have none.
_REGISTRIES: tuple[tuple[type, Callable[[RuntimeState, Any], object]], ...] = (
    (Counter, RuntimeState.add_counter),
    (DirectCounter, RuntimeState.add_direct_counter),
    (Meter, RuntimeState.add_meter),
    (DirectMeter, RuntimeState.add_direct_meter),
    (Register, RuntimeState.add_register),
    (ActionProfile, RuntimeState.add_action_profile),
)


def build_objects(program: ir.Program, state: RuntimeState) -> dict[str, Any]:
    """Create and register every runtime object; returns the codegen namespace."""
    ns: dict[str, Any] = {}
    for ext in program.externs:
        obj = _extern(ext, program)
        if obj is None:
            continue
        ns[f"X{ext.uid}"] = obj
        add = next((add for kind, add in _REGISTRIES if isinstance(obj, kind)), None)
        if add is not None:
            add(state, obj)
    for table in program.tables:
        profile = ns.get(f"X{table.implementation.uid}") if table.implementation else None
        spec = table_spec(table)
        runtime_table = rt.Table(spec, profile)
        state.add_table(runtime_table)
        ns[f"T{table.uid}"] = runtime_table
        if table.entries:
            _load_entries(table, runtime_table)
    for vs in program.value_sets:
        ns[f"VS{vs.uid}"] = ValueSetState(vs.name, vs.size, vs.widths)
    return ns


def table_spec(table: ir.Table) -> rt.TableSpec:
    """The runtime description of a table."""
    keys = tuple(rt.KeySpec(k.name, k.width, k.match_kind) for k in table.keys)  # type: ignore[arg-type]
    actions = tuple(action_spec(r) for r in table.actions)
    return rt.TableSpec(
        name=table.name,
        keys=keys,
        actions=actions,
        default_action=rt.ActionCall(table.default_action.name, tuple(table.default_args)),
        size=table.size,
        default_is_const=table.default_const,
        is_const=table.entries_const,
        implementation=table.implementation.name if table.implementation else None,
        direct_counter=table.direct_counter.name if table.direct_counter else None,
        direct_meter=table.direct_meter.name if table.direct_meter else None,
        supports_idle_timeout=table.support_timeout,
        largest_priority_wins=table.priority_largest_wins,
    )


def _const_entry_priorities(table: ir.Table) -> list[int]:
    """Priorities of ``const entries`` as p4c-bm2-ss gives them to BMv2.

    p4c's EntryPriorities pass leaves const entries alone; the BMv2 back end
    then gives each entry its ``@priority(n)`` annotation, or else its 1-based
    position, and BMv2 prefers the smallest value.  The runtime prefers the
    largest, so the order is turned around here."""
    bmv2: list[int] = []
    for position, e in enumerate(table.entries, start=1):
        ann = ir.find_annotation(e.annotations, "priority")
        if e.priority is not None:
            bmv2.append(e.priority)
        elif ann is not None and ann.args and isinstance(ann.args[0], int):
            bmv2.append(ann.args[0])
        else:
            bmv2.append(position)
    if not table.priority_largest_wins:
        return bmv2
    top = max(bmv2, default=0) + 1
    return [top - p for p in bmv2]


def _load_entries(table: ir.Table, runtime_table: rt.Table) -> None:
    needs_prio = any(k.match_kind in ("ternary", "range", "optional") for k in table.keys)
    if needs_prio and table.entries_const:
        prios = _const_entry_priorities(table)
    elif needs_prio:
        prios = rt.initial_entry_priorities(
            [e.priority for e in table.entries],
            largest_priority_wins=table.priority_largest_wins,
        )
    else:
        prios = [0] * len(table.entries)
    entries = []
    for e, prio in zip(table.entries, prios, strict=True):
        matches = tuple(
            _match(ks, k.width)
            for ks, k in zip(e.keys, table.keys, strict=True)
            if k.match_kind != "selector"
        )
        entries.append(
            rt.TableEntry(
                matches, prio, rt.ActionCall(e.action.name, tuple(e.args)), is_const=e.is_const
            )
        )
    try:
        runtime_table.load_initial(entries)
    except RuntimeConfigError as err:
        raise UnsupportedError(table.loc, f"initial entries of {table.name}: {err}") from err


def _unit(value: Any) -> CounterUnit:
    return {
        "packets": CounterUnit.PACKETS,
        "bytes": CounterUnit.BYTES,
        "packets_and_bytes": CounterUnit.PACKETS_AND_BYTES,
    }[str(value)]


def _mtype(value: Any) -> MeterType:
    return {"packets": MeterType.PACKETS, "bytes": MeterType.BYTES}[str(value)]


def _extern(ext: ir.ExternInstance, program: ir.Program) -> Any:
    kind, a = ext.type_name, ext.args
    if kind == "counter":
        return Counter(ext.name, int(a[0]), _unit(a[1]))
    if kind == "direct_counter":
        return DirectCounter(ext.name, ext.table or "", _unit(a[0]))
    if kind == "meter":
        return Meter(ext.name, int(a[0]), _mtype(a[1]))
    if kind == "direct_meter":
        return DirectMeter(ext.name, ext.table or "", _mtype(a[0]))
    if kind == "register":
        width = bit_width(ext.type_args[0]) if ext.type_args else 32
        return Register(ext.name, int(a[0]), width)
    if kind == "action_profile":
        return ActionProfile(ext.name, int(a[0]), _profile_actions(ext, program))
    if kind == "action_selector":
        table = next((t for t in program.tables if t.implementation is ext), None)
        widths = [k.width for k in table.keys if k.match_kind == "selector"] if table else []
        return ActionSelector(
            ext.name,
            int(a[1]),
            algorithm=str(a[0]),
            max_group_size=0,
            selector_widths=widths,
            actions=_profile_actions(ext, program),
        )
    if kind in ("Checksum16",):
        return None
    raise UnsupportedError(ext.loc, f"extern {kind}")


def _profile_actions(ext: ir.ExternInstance, program: ir.Program) -> list[rt.ActionSpec]:
    for t in program.tables:
        if t.implementation is ext:
            return [action_spec(r) for r in t.actions]
    return []


__all__ = ["ValueSetState", "build_objects", "table_spec"]
