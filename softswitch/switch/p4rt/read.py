"""Read: P4Runtime entity filters -> entities of the runtime state.

Every entity kind accepts the spec's wildcards: id 0 means every object of the
kind, an unset key or index means every entry or cell.  Values are returned in
canonical bytestring form.  A request for one specific table entry that does
not exist returns nothing, as BMv2 does; a malformed filter (bad id, bad key)
fails the whole Read with its status.  Entries programmed one-shot read back
with their action set; the hidden members and groups behind them are not
listed.  A default entry is read without direct resources (bmv2 has none).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from finsy.proto import p4i, p4r

from softswitch.errors import RuntimeConfigError
from softswitch.runtime import tables as rt
from softswitch.runtime.externs import Counter, CounterData, Meter, MeterConfig, Register
from softswitch.runtime.profiles import ActionSelector
from softswitch.runtime.state import RuntimeState
from softswitch.switch.p4rt import oneshot
from softswitch.switch.p4rt.codec import Schema, _Kind, encode_bits
from softswitch.switch.p4rt.entries import (
    decode_key,
    encode_action,
    encode_fields,
    encode_key,
    encode_replicas,
)
from softswitch.switch.p4rt.write import DEFAULT_ENTRY_RESOURCES, DigestConfigs

T = TypeVar("T")
_Info = TypeVar("_Info", p4i.Counter, p4i.Meter, p4i.Register)
_Array = TypeVar("_Array", Counter, Meter, Register)
_IndexedEntry = p4r.CounterEntry | p4r.MeterEntry | p4r.RegisterEntry


@dataclass(slots=True)
class ReadSource:
    """What a read looks at; ``now_ns`` is the clock of idle timeouts."""

    schema: Schema
    state: RuntimeState
    digests: DigestConfigs
    now_ns: int = 0


def read_entities(source: ReadSource, request: p4r.ReadRequest) -> Iterator[p4r.Entity]:
    """Every entity the request's filters select."""
    for entity in request.entities:
        kind = entity.WhichOneof("entity")
        if kind is None:
            raise RuntimeConfigError("INVALID_ARGUMENT", "the read request has an empty entity")
        reader = _READERS.get(kind)
        if reader is None:
            raise RuntimeConfigError("UNIMPLEMENTED", f"reading {kind} is not supported")
        yield from reader(source, getattr(entity, kind))


def _selected(kind: _Kind[T], ident: int) -> list[T]:
    return list(kind.by_id.values()) if ident == 0 else [kind.get(ident)]


def _counter_data(data: CounterData | None, out: p4r.CounterData) -> None:
    data = data or CounterData()
    out.packet_count = _as_int64(data.packets)
    out.byte_count = _as_int64(data.bytes)


def _meter_config(config: MeterConfig | None, out: p4r.MeterConfig) -> None:
    if config is None:  # an unset meter: no config
        return
    out.cir, out.cburst, out.pir, out.pburst = config.rates_per_second()


# --- table entries ------------------------------------------------------------------------


def _table_entries(source: ReadSource, msg: p4r.TableEntry) -> Iterator[p4r.Entity]:
    schema = source.schema
    tables = (
        list(schema.tables.by_id.values())
        if msg.table_id == 0
        else [schema.tables.get(msg.table_id)]
    )
    for info in tables:
        table = source.state.tables[info.preamble.name]
        if msg.is_default_action:
            yield _default_entity(source, info, table, msg)
            continue
        for entry in _entries_of(source, info, table, msg):
            yield p4r.Entity(table_entry=encode_entry(source, info, table, entry, msg))


def _entries_of(
    source: ReadSource, info: p4i.Table, table: rt.Table, msg: p4r.TableEntry
) -> list[rt.TableEntry]:
    if msg.match:
        key, priority = decode_key(source.schema, info, msg.match, msg.priority)
        try:
            return [table.get(key, priority)]
        except RuntimeConfigError as exc:
            if exc.code == "NOT_FOUND":
                return []
            raise
    return table.read(priority=msg.priority, metadata=bytes(msg.metadata))


def encode_entry(
    source: ReadSource,
    info: p4i.Table,
    table: rt.Table,
    entry: rt.TableEntry,
    request: p4r.TableEntry | None = None,
) -> p4r.TableEntry:
    out = p4r.TableEntry(table_id=info.preamble.id, priority=entry.priority)
    encode_key(info, entry.matches, out)
    if entry.action is not None:
        encode_action(source.schema, entry.action, out.action.action)
    elif entry.member_id is not None:
        out.action.action_profile_member_id = entry.member_id
    elif entry.group_id is not None and oneshot.is_hidden(entry.group_id):
        assert table.profile is not None
        oneshot.encode_action_set(
            source.schema, table.profile, entry.group_id, out.action.action_profile_action_set
        )
    elif entry.group_id is not None:
        out.action.action_profile_group_id = entry.group_id
    out.metadata = entry.metadata
    out.idle_timeout_ns = entry.idle_timeout_ns
    out.is_const = entry.is_const
    if request is None:
        return out
    if request.HasField("counter_data") and source.schema.direct_counter_of(info) is not None:
        _counter_data(entry.counter, out.counter_data)
    if request.HasField("meter_config") and entry.meter_config is not None:
        _meter_config(entry.meter_config, out.meter_config)
    if request.HasField("time_since_last_hit") and info.idle_timeout_behavior:
        out.time_since_last_hit.elapsed_ns = table.time_since_last_hit(entry, source.now_ns)
    return out


def _default_entity(
    source: ReadSource, info: p4i.Table, table: rt.Table, msg: p4r.TableEntry
) -> p4r.Entity:
    if msg.HasField("time_since_last_hit"):
        raise RuntimeConfigError(
            "INVALID_ARGUMENT",
            "Default table entries do not support entry ageing, do not set "
            "'time_since_last_hit' in your ReadRequest",
        )
    out = p4r.TableEntry(table_id=info.preamble.id, is_default_action=True)
    encode_action(source.schema, table.default_action, out.action.action)
    out.is_const = bool(info.const_default_action_id) or table.spec.default_is_const
    return p4r.Entity(table_entry=out)


# --- action profiles ------------------------------------------------------------------------


def _members(source: ReadSource, msg: p4r.ActionProfileMember) -> Iterator[p4r.Entity]:
    for info in _selected(source.schema.action_profiles, msg.action_profile_id):
        profile = source.state.action_profiles[info.preamble.name]
        for member in profile.members():
            if msg.member_id and member.member_id != msg.member_id:
                continue
            if oneshot.is_hidden(member.member_id):
                continue
            out = p4r.ActionProfileMember(
                action_profile_id=info.preamble.id, member_id=member.member_id
            )
            encode_action(source.schema, member.action, out.action)
            yield p4r.Entity(action_profile_member=out)


def _groups(source: ReadSource, msg: p4r.ActionProfileGroup) -> Iterator[p4r.Entity]:
    for info in _selected(source.schema.action_profiles, msg.action_profile_id):
        selector = source.state.action_profiles[info.preamble.name]
        if not isinstance(selector, ActionSelector):
            continue
        for group in selector.groups():
            if msg.group_id and group.group_id != msg.group_id:
                continue
            if oneshot.is_hidden(group.group_id):
                continue
            out = p4r.ActionProfileGroup(
                action_profile_id=info.preamble.id, group_id=group.group_id, max_size=group.max_size
            )
            for member_id, weight in group.members:
                out.members.add(member_id=member_id, weight=weight)
            yield p4r.Entity(action_profile_group=out)


# --- counters, meters, registers ----------------------------------------------------------------


def _cells(size: int, msg: _IndexedEntry) -> range:
    if not msg.HasField("index"):
        return range(size)
    index = msg.index.index
    if not 0 <= index < size:
        raise RuntimeConfigError("OUT_OF_RANGE", f"index {index} is not in [0, {size})")
    return range(index, index + 1)


def _array_cells(
    kind: _Kind[_Info], ident: int, arrays: dict[str, _Array], msg: _IndexedEntry
) -> Iterator[tuple[int, _Array, int]]:
    """(P4Info id, instance, index) of each cell a counter, meter or register read selects."""
    for info in _selected(kind, ident):
        array = arrays[info.preamble.name]
        for i in _cells(array.size, msg):
            yield info.preamble.id, array, i


def _counters(source: ReadSource, msg: p4r.CounterEntry) -> Iterator[p4r.Entity]:
    cells = _array_cells(source.schema.counters, msg.counter_id, source.state.counters, msg)
    for counter_id, counter, i in cells:
        out = p4r.CounterEntry(counter_id=counter_id, index=p4r.Index(index=i))
        _counter_data(counter.read(i), out.data)
        yield p4r.Entity(counter_entry=out)


def _direct_cells(
    source: ReadSource,
    request: p4r.TableEntry,
    attached: Callable[[p4i.Table], object | None],
    what: str,
) -> Iterator[tuple[p4r.TableEntry, rt.TableEntry]]:
    """The entries a direct counter or meter read selects, each with its encoding.

    ``attached`` says whether a table has the direct extern (``what`` names it).
    """
    if request.is_default_action:
        raise RuntimeConfigError("UNIMPLEMENTED", DEFAULT_ENTRY_RESOURCES)
    for info in _selected(source.schema.tables, request.table_id):
        if attached(info) is None:
            if request.table_id:
                raise RuntimeConfigError("INVALID_ARGUMENT", f"{info.preamble.name} has no {what}")
            continue
        table = source.state.tables[info.preamble.name]
        for entry in _entries_of(source, info, table, request):
            yield encode_entry(source, info, table, entry), entry


def _direct_counters(source: ReadSource, msg: p4r.DirectCounterEntry) -> Iterator[p4r.Entity]:
    attached = source.schema.direct_counter_of
    for encoded, entry in _direct_cells(source, msg.table_entry, attached, "direct counter"):
        out = p4r.DirectCounterEntry(table_entry=encoded)
        _counter_data(entry.counter, out.data)
        yield p4r.Entity(direct_counter_entry=out)


def _meters(source: ReadSource, msg: p4r.MeterEntry) -> Iterator[p4r.Entity]:
    cells = _array_cells(source.schema.meters, msg.meter_id, source.state.meters, msg)
    for meter_id, meter, i in cells:
        out = p4r.MeterEntry(meter_id=meter_id, index=p4r.Index(index=i))
        _meter_config(meter.get_config(i), out.config)
        yield p4r.Entity(meter_entry=out)


def _direct_meters(source: ReadSource, msg: p4r.DirectMeterEntry) -> Iterator[p4r.Entity]:
    attached = source.schema.direct_meter_of
    for encoded, entry in _direct_cells(source, msg.table_entry, attached, "direct meter"):
        out = p4r.DirectMeterEntry(table_entry=encoded)
        _meter_config(entry.meter_config, out.config)
        yield p4r.Entity(direct_meter_entry=out)


def _registers(source: ReadSource, msg: p4r.RegisterEntry) -> Iterator[p4r.Entity]:
    cells = _array_cells(source.schema.registers, msg.register_id, source.state.registers, msg)
    for register_id, register, i in cells:
        out = p4r.RegisterEntry(register_id=register_id, index=p4r.Index(index=i))
        out.data.bitstring = encode_bits(register.get(i))
        yield p4r.Entity(register_entry=out)


# --- replication engine, digests ---------------------------------------------------------------


def _pre(source: ReadSource, msg: p4r.PacketReplicationEngineEntry) -> Iterator[p4r.Entity]:
    pre = source.state.pre
    which = msg.WhichOneof("type")
    if which == "multicast_group_entry":
        wanted = msg.multicast_group_entry.multicast_group_id
        for mgid, replicas in sorted(pre.multicast_groups().items()):
            if wanted and mgid != wanted:
                continue
            group = p4r.MulticastGroupEntry(multicast_group_id=mgid)
            encode_replicas(replicas, group.replicas)
            yield p4r.Entity(
                packet_replication_engine_entry=p4r.PacketReplicationEngineEntry(
                    multicast_group_entry=group
                )
            )
    elif which == "clone_session_entry":
        wanted = msg.clone_session_entry.session_id
        for session in sorted(pre.clone_sessions(), key=lambda s: s.session_id):
            if wanted and session.session_id != wanted:
                continue
            clone = p4r.CloneSessionEntry(
                session_id=session.session_id,
                class_of_service=session.class_of_service,
                packet_length_bytes=session.packet_length_bytes,
            )
            encode_replicas(session.replicas, clone.replicas)
            yield p4r.Entity(
                packet_replication_engine_entry=p4r.PacketReplicationEngineEntry(
                    clone_session_entry=clone
                )
            )
    else:
        raise RuntimeConfigError("INVALID_ARGUMENT", "the replication engine entry is empty")


def _digests(source: ReadSource, msg: p4r.DigestEntry) -> Iterator[p4r.Entity]:
    for info in _selected(source.schema.digests, msg.digest_id):
        config = source.digests.config(info.preamble.id)
        if config is None:
            continue
        out = p4r.DigestEntry(digest_id=info.preamble.id)
        out.config.CopyFrom(config)
        yield p4r.Entity(digest_entry=out)


def _value_sets(source: ReadSource, msg: p4r.ValueSetEntry) -> Iterator[p4r.Entity]:
    for info in _selected(source.schema.value_sets, msg.value_set_id):
        value_set = source.state.value_sets.get(info.preamble.name)
        out = p4r.ValueSetEntry(value_set_id=info.preamble.id)
        for member in value_set.members if value_set is not None else ():
            encode_fields(info.match, member, out.members.add().match)
        yield p4r.Entity(value_set_entry=out)


_READERS: dict[str, Callable[[ReadSource, object], Iterator[p4r.Entity]]] = {
    "table_entry": _table_entries,  # type: ignore[dict-item]
    "action_profile_member": _members,  # type: ignore[dict-item]
    "action_profile_group": _groups,  # type: ignore[dict-item]
    "counter_entry": _counters,  # type: ignore[dict-item]
    "direct_counter_entry": _direct_counters,  # type: ignore[dict-item]
    "meter_entry": _meters,  # type: ignore[dict-item]
    "direct_meter_entry": _direct_meters,  # type: ignore[dict-item]
    "register_entry": _registers,  # type: ignore[dict-item]
    "packet_replication_engine_entry": _pre,  # type: ignore[dict-item]
    "digest_entry": _digests,  # type: ignore[dict-item]
    "value_set_entry": _value_sets,  # type: ignore[dict-item]
}


def _as_int64(value: int) -> int:
    """A 64-bit counter cell as P4Runtime's ``int64`` carries it: cells of 2^63 and more
    read as negative numbers, as BMv2's server (PI) copies them."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value
