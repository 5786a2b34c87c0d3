"""STF control-plane commands applied to a pipeline's :class:`RuntimeState`.

This is the part of p4c's BMv2 driver that turns STF lines into
simple_switch_CLI commands, done directly on the runtime objects:

* Names of tables, counters, registers, profiles resolve through
  ``RuntimeState`` (exact, or a unique dotted suffix). Key fields and actions
  resolve within their table the same way; a key may also be named in BMv2's
  spellings of a validity key (``h.$valid$``, ``h.valid``) and of a stack
  element (``stack$0`` for ``stack[0]``).
* Key values take their meaning from the match kind, as in the driver:
  a ternary hex value only cares about the digits it writes (``0x**01`` on a
  16-bit key is ``0x0001 &&& 0x00ff``, and ``0x01`` is ``0x01 &&& 0x0f``); an
  lpm value without ``/LEN`` has a prefix of the bits its non-``*`` digits
  spell; an exact key left out of an ``add`` is 0, any other key left out is a
  wildcard. A decimal value covers the whole key.
* Priorities: the driver hands BMv2 ``10000 - p`` and BMv2 prefers the
  smallest number, so a larger STF priority wins, which is the runtime's
  (P4Runtime's) order. The runtime gets ``p + 1`` so that STF priority 0 stays
  valid; an entry of a table that needs a priority but has none gets 1. Ties
  go to the entry added first, as in BMv2.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from softswitch.errors import RuntimeConfigError, StfError
from softswitch.runtime import tables as rt
from softswitch.runtime.externs import CounterData, MeterConfig
from softswitch.runtime.state import RuntimeState
from softswitch.stf import syntax


@dataclass(frozen=True, slots=True)
class CheckFailure:
    """A ``check_counter`` / ``*_read`` comparison that did not hold."""

    line: int
    message: str


class _Bad(Exception):
    """A command that cannot be applied; ControlPlane.apply adds the location."""


_OPS: dict[str, Callable[[int, int], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


class ControlPlane:
    """Applies the control-plane commands of one STF file to one pipeline."""

    def __init__(self, state: RuntimeState, stf_file: str) -> None:
        self.state = state
        self.stf_file = stf_file
        self._entries: dict[str, rt.TableEntry] = {}  # '= HANDLE' of add lines
        self._nodes: dict[int, int] = {}  # BMv2 node handle -> runtime node handle

    def apply(self, command: syntax.Command) -> list[CheckFailure]:
        """Apply one command; returns the checks of it that failed.

        Raises StfError, located at the command's line, for a command that
        cannot be applied (unknown name, value too wide, rejected entry...).
        """
        try:
            return self._dispatch(command)
        except (_Bad, RuntimeConfigError) as exc:
            raise StfError(self.stf_file, command.line, str(exc)) from None

    def _dispatch(self, cmd: syntax.Command) -> list[CheckFailure]:  # noqa: C901 - one case per STF command
        match cmd:
            case syntax.Add():
                return self._add(cmd)
            case syntax.SetDefault():
                return self._setdefault(cmd)
            case syntax.RemoveAll():
                return self._remove_all(cmd)
            case syntax.ProfileMember():
                return self._member(cmd)
            case syntax.ProfileGroup():
                return self._group(cmd)
            case syntax.CounterRead():
                return self._counter_read(cmd)
            case syntax.CounterWrite():
                return self._counter_write(cmd)
            case syntax.CounterReset():
                return self._counter_reset(cmd)
            case syntax.RegisterRead():
                return self._register_read(cmd)
            case syntax.RegisterWrite():
                return self._register_write(cmd)
            case syntax.RegisterReset():
                return self._register_reset(cmd)
            case syntax.MeterSetRates():
                return self._meter_set_rates(cmd)
            case syntax.MirroringAdd():
                return self._mirroring_add(cmd)
            case syntax.McMgrpCreate():
                return self._mc_mgrp_create(cmd)
            case syntax.McMgrpDestroy():
                return self._mc_mgrp_destroy(cmd)
            case syntax.McNodeCreate():
                return self._mc_node_create(cmd)
            case syntax.McNodeUpdate():
                return self._mc_node_update(cmd)
            case syntax.McNodeDestroy():
                return self._mc_node_destroy(cmd)
            case syntax.McNodeAssociate():
                return self._mc_node_associate(cmd)
            case syntax.McNodeDissociate():
                return self._mc_node_dissociate(cmd)
            case _:
                raise _Bad(f"not a control-plane command: {type(cmd).__name__}")

    # ------------------------------------------------------------ tables

    def _add(self, cmd: syntax.Add) -> list[CheckFailure]:
        table = self.state.table(cmd.table)
        keys = table.match_keys
        matches: list[rt.Match | None] = [
            rt.Exact(0) if key.kind == "exact" else None for key in keys
        ]
        given: set[int] = set()
        for name, value in cmd.keys:
            index = _key_index(keys, name, table.spec.name)
            if index in given:
                raise _Bad(f"key '{keys[index].name}' is given twice")
            given.add(index)
            matches[index] = key_match(value, keys[index])
        entry = rt.TableEntry(tuple(matches), priority=_priority(table, cmd.priority))
        if isinstance(cmd.action, syntax.ActionRef):
            entry.action = self._action_call(cmd.action, table.spec.actions, table.spec.name)
        elif isinstance(cmd.action, syntax.MemberRef):
            entry.member_id = cmd.action.member_id
        else:
            entry.group_id = cmd.action.group_id
        inserted = table.insert(entry)
        if cmd.handle is not None:
            self._entries[cmd.handle] = inserted
        return []

    def _setdefault(self, cmd: syntax.SetDefault) -> list[CheckFailure]:
        table = self.state.table(cmd.table)
        table.set_default(self._action_call(cmd.action, table.spec.actions, table.spec.name))
        return []

    def _remove_all(self, cmd: syntax.RemoveAll) -> list[CheckFailure]:
        for table in self.state.tables.values():
            table.clear()
        self._entries.clear()
        return []

    def _member(self, cmd: syntax.ProfileMember) -> list[CheckFailure]:
        profile = self.state.action_profile(cmd.profile)
        actions = [
            action
            for table in self.state.tables.values()
            if table.spec.implementation == profile.name
            for action in table.spec.actions
        ]
        profile.insert_member(cmd.member_id, self._action_call(cmd.action, actions, profile.name))
        return []

    def _group(self, cmd: syntax.ProfileGroup) -> list[CheckFailure]:
        from softswitch.runtime.profiles import ActionSelector

        profile = self.state.action_profile(cmd.profile)
        if not isinstance(profile, ActionSelector):
            raise _Bad(f"'{profile.name}' is an action profile, not an action selector")
        profile.insert_group(cmd.group_id, dict.fromkeys(cmd.members, 1))
        return []

    def _action_call(
        self, ref: syntax.ActionRef, actions: Sequence[rt.ActionSpec], owner: str
    ) -> rt.ActionCall:
        spec = _resolve(ref.name, actions, lambda a: a.name, f"action in '{owner}'")
        given = dict(ref.args)
        unknown = sorted(set(given) - {p for p, _ in spec.params})
        if unknown:
            raise _Bad(f"action '{spec.name}' has no parameter '{unknown[0]}'")
        args: list[int] = []
        for param, width in spec.params:
            if param not in given:
                raise _Bad(f"missing argument '{param}' of action '{spec.name}'")
            args.append(_fit(given[param], width, f"argument '{param}'"))
        return rt.ActionCall(spec.name, tuple(args))

    # ----------------------------------------------------------- externs

    def _counter_read(self, cmd: syntax.CounterRead) -> list[CheckFailure]:
        data = self._read_counter(cmd.name, cmd.index)
        failures = []
        for check in cmd.checks:
            actual = data.packets if check.field == "packets" else data.bytes
            if not _OPS[check.op](actual, check.value):
                failures.append(
                    CheckFailure(
                        cmd.line,
                        f"counter {cmd.name}({cmd.index}): {check.field} is {actual}, "
                        f"expected {check.op} {check.value}",
                    )
                )
        return failures

    def _read_counter(self, name: str, index: int | str) -> CounterData:
        if isinstance(index, str):
            entry = self._entry(index)
            return self.state.direct_counter(name).read(entry)
        return self.state.counter(name).read(index)

    def _entry(self, handle: str) -> rt.TableEntry:
        try:
            return self._entries[handle]
        except KeyError:
            raise _Bad(f"no entry was added with '= {handle}'") from None

    def _counter_write(self, cmd: syntax.CounterWrite) -> list[CheckFailure]:
        self.state.counter(cmd.name).write(cmd.index, CounterData(cmd.packets, cmd.bytes))
        return []

    def _counter_reset(self, cmd: syntax.CounterReset) -> list[CheckFailure]:
        self.state.counter(cmd.name).reset()
        return []

    def _register_read(self, cmd: syntax.RegisterRead) -> list[CheckFailure]:
        actual = self.state.register(cmd.name).get(cmd.index)
        return [
            CheckFailure(
                cmd.line,
                f"register {cmd.name}[{cmd.index}] is {actual} ({actual:#x}), "
                f"expected {check.op} {check.value} ({check.value:#x})",
            )
            for check in cmd.checks
            if not _OPS[check.op](actual, check.value)
        ]

    def _register_write(self, cmd: syntax.RegisterWrite) -> list[CheckFailure]:
        self.state.register(cmd.name).set(cmd.index, cmd.value)
        return []

    def _register_reset(self, cmd: syntax.RegisterReset) -> list[CheckFailure]:
        self.state.register(cmd.name).reset()
        return []

    def _meter_set_rates(self, cmd: syntax.MeterSetRates) -> list[CheckFailure]:
        if len(cmd.rates) != 2:
            raise _Bad("meter_set_rates needs two RATE:BURST pairs (committed, peak)")
        (cir, cburst), (pir, pburst) = cmd.rates
        # simple_switch_CLI rates are per microsecond; MeterConfig's are per second.
        config = MeterConfig(round(cir * 1_000_000), cburst, round(pir * 1_000_000), pburst)
        if isinstance(cmd.index, str):
            self.state.direct_meter(cmd.name).set_config(self._entry(cmd.index), config)
        else:
            self.state.meter(cmd.name).set_config(cmd.index, config)
        return []

    # ------------------------------------------------- PRE and mirroring

    def _mirroring_add(self, cmd: syntax.MirroringAdd) -> list[CheckFailure]:
        self.state.pre.mirroring_add(cmd.session, cmd.port)
        return []

    def _mc_mgrp_create(self, cmd: syntax.McMgrpCreate) -> list[CheckFailure]:
        self.state.pre.mc_mgrp_create(cmd.mgrp)
        return []

    def _mc_mgrp_destroy(self, cmd: syntax.McMgrpDestroy) -> list[CheckFailure]:
        self.state.pre.mc_mgrp_destroy(cmd.mgrp)
        return []

    def _mc_node_create(self, cmd: syntax.McNodeCreate) -> list[CheckFailure]:
        # BMv2 hands out the smallest free node handle; STF files count on it.
        bmv2_handle = next(h for h in range(len(self._nodes) + 1) if h not in self._nodes)
        self._nodes[bmv2_handle] = self.state.pre.mc_node_create(cmd.rid, cmd.ports)
        return []

    def _node(self, handle: int) -> int:
        try:
            return self._nodes[handle]
        except KeyError:
            raise _Bad(f"no multicast node with handle {handle}") from None

    def _mc_node_update(self, cmd: syntax.McNodeUpdate) -> list[CheckFailure]:
        self.state.pre.mc_node_update(self._node(cmd.handle), cmd.ports)
        return []

    def _mc_node_destroy(self, cmd: syntax.McNodeDestroy) -> list[CheckFailure]:
        self.state.pre.mc_node_destroy(self._node(cmd.handle))
        del self._nodes[cmd.handle]
        return []

    def _mc_node_associate(self, cmd: syntax.McNodeAssociate) -> list[CheckFailure]:
        self.state.pre.mc_node_associate(cmd.mgrp, self._node(cmd.handle))
        return []

    def _mc_node_dissociate(self, cmd: syntax.McNodeDissociate) -> list[CheckFailure]:
        self.state.pre.mc_node_dissociate(cmd.mgrp, self._node(cmd.handle))
        return []


# ------------------------------------------------------------ resolution

T = TypeVar("T")


def _resolve(name: str, items: Iterable[T], name_of: Callable[[T], str], what: str) -> T:
    """The item named exactly, else by a unique dotted suffix, else by a unique suffix."""
    items = list(items)
    for item in items:
        if name_of(item) == name:
            return item
    for suffix in ("." + name, name):
        found = [item for item in items if name_of(item).endswith(suffix)]
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            names = ", ".join(sorted(name_of(i) for i in found))
            raise _Bad(f"ambiguous {what} '{name}': could be {names}")
    known = ", ".join(sorted(name_of(i) for i in items)) or "none"
    raise _Bad(f"no {what} named '{name}' (known: {known})")


def _canonical_key(name: str) -> str:
    """One spelling for a key name: stacks as ``[i]``, validity as ``.$valid$``."""
    name = re.sub(r"\$(\d+)", r"[\1]", name)
    for suffix in (".isValid()", ".valid", "$valid$"):
        if name.endswith(suffix) and not name.endswith(".$valid$"):
            return name[: -len(suffix)] + ".$valid$"
    if name in ("valid", "isValid()"):
        return "$valid$"
    return name


def _key_index(keys: Sequence[rt.KeySpec], name: str, table: str) -> int:
    wanted = _canonical_key(name)
    names = [_canonical_key(k.name) for k in keys]
    for candidate in (wanted, wanted + ".$valid$"):
        if candidate in names:
            return names.index(candidate)
        found = [i for i, full in enumerate(names) if full.endswith("." + candidate)]
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            options = ", ".join(keys[i].name for i in found)
            raise _Bad(f"ambiguous key '{name}' of table '{table}': could be {options}")
    known = ", ".join(k.name for k in keys) or "none"
    raise _Bad(f"table '{table}' has no key '{name}' (keys: {known})")


def _priority(table: rt.Table, stf_priority: int | None) -> int:
    if not table.needs_priority:
        return 0
    return 1 if stf_priority is None else stf_priority + 1


# ---------------------------------------------------------------- values


def _fit(number: syntax.Number, width: int, what: str) -> int:
    """The value of a literal as a bit<width> pattern; negative decimals wrap."""
    if number.has_wildcards:
        raise _Bad(f"{what} cannot have '*' digits: '{number.text}'")
    value = number.value
    if width and -(1 << (width - 1)) <= value < 0:
        value += 1 << width  # two's complement
    if not 0 <= value < (1 << width):
        raise _Bad(f"{what} value {number.text} does not fit in {width} bits")
    return value


def _prefix_mask(prefix_len: int, width: int) -> int:
    return ((1 << prefix_len) - 1) << (width - prefix_len)


def key_match(value: syntax.KeyValue, key: rt.KeySpec) -> rt.Match | None:
    """The runtime match for an STF key value on ``key``; None is a wildcard."""
    what = f"key '{key.name}'"
    full = (1 << key.width) - 1
    if isinstance(value, syntax.Wildcard):
        if key.kind == "exact":
            raise _Bad(f"{what} is an exact key and cannot be '*'")
        return None
    if key.kind == "exact":
        if not isinstance(value, syntax.Number):
            raise _Bad(f"{what} is an exact key; '{value.text}' is not a plain value")
        return rt.Exact(_fit(value, key.width, what))
    if key.kind == "ternary":
        return _ternary(value, key, full, what)
    if key.kind == "lpm":
        return _lpm(value, key, what)
    if key.kind == "range":
        return _range(value, key, full, what)
    if key.kind == "optional":
        if not isinstance(value, syntax.Number) or value.has_wildcards:
            raise _Bad(f"{what} is an optional key: give a value or '*', not '{value.text}'")
        return rt.Optional(_fit(value, key.width, what))
    raise _Bad(f"{what} has match kind {key.kind}, which STF entries cannot set")


def _ternary(value: syntax.KeyValue, key: rt.KeySpec, full: int, what: str) -> rt.Match | None:
    if isinstance(value, syntax.Masked):
        mask = _fit(value.mask, key.width, what + " mask")
        data = _fit(value.value, key.width, what)
    elif isinstance(value, syntax.Prefix):
        if value.prefix_len > key.width:
            raise _Bad(f"prefix /{value.prefix_len} is longer than {what} ({key.width} bits)")
        mask = _prefix_mask(value.prefix_len, key.width)
        data = _fit(value.value, key.width, what)
    elif isinstance(value, syntax.Number):
        mask = full if value.bits is None else value.care & full
        data = _fit(syntax.Number(value.value, -1, None, value.text), key.width, what)
    else:
        raise _Bad(f"{what} is a ternary key; '{value.text}' is a range")
    if mask == 0:
        return None
    return rt.Ternary(data & mask, mask)


def _lpm(value: syntax.KeyValue, key: rt.KeySpec, what: str) -> rt.Match | None:
    if isinstance(value, syntax.Prefix):
        prefix_len = value.prefix_len
        data = _fit(value.value, key.width, what)
    elif isinstance(value, syntax.Number):
        prefix_len = key.width if value.bits is None else value.care.bit_count()
        data = _fit(syntax.Number(value.value, -1, None, value.text), key.width, what)
    else:
        raise _Bad(f"{what} is an lpm key; write VALUE or VALUE/LEN, not '{value.text}'")
    if prefix_len > key.width:
        raise _Bad(f"prefix /{prefix_len} is longer than {what} ({key.width} bits)")
    if prefix_len == 0:
        return None
    return rt.Lpm(data & _prefix_mask(prefix_len, key.width), prefix_len)


def _range(value: syntax.KeyValue, key: rt.KeySpec, full: int, what: str) -> rt.Match | None:
    if isinstance(value, syntax.Span):
        low = _fit(value.low, key.width, what)
        high = _fit(value.high, key.width, what)
    elif isinstance(value, syntax.Number):
        low = high = _fit(value, key.width, what)
    else:
        raise _Bad(f"{what} is a range key; write LOW->HIGH or a value, not '{value.text}'")
    if low > high:
        raise _Bad(f"empty range {value.text} for {what}")
    if low == 0 and high == full:
        return None
    return rt.Range(low, high)
