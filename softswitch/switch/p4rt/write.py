"""Write: P4Runtime updates -> calls on the runtime state.

Each update is translated and applied by one ``_<entity>`` function that
returns an *undo* closure.  Atomicity:

- CONTINUE_ON_ERROR: every update is attempted; each gets its own status.
  After :data:`MAX_FAILURES` failures the rest are not attempted (ABORTED), so
  that the error report can always say, within what a gRPC client accepts,
  exactly which updates were applied (:mod:`~softswitch.switch.p4rt.write_status`).
- ROLLBACK_ON_ERROR and DATAPLANE_ATOMIC: at the first failure the updates
  already applied are undone in reverse order.  The failed update reports its
  error, the others ABORTED.  Since packets and P4Runtime requests share one
  thread, no packet ever sees a half-applied batch, so DATAPLANE_ATOMIC costs
  nothing more.

Errors are returned as one ``p4.v1.Error`` per update (OK for the successful
ones), which the service packs into the ``google.rpc.Status`` details of an
UNKNOWN status, as BMv2 does.  A failed update leaves the state as it was.

Before its handler runs, each update is checked against the writer's role
config (:mod:`softswitch.switch.p4rt.roles`).  A table entry may carry an
action set (one-shot selector programming, :mod:`softswitch.switch.p4rt.oneshot`):
its hidden group is made with the entry and removed with it, undo included.
Value sets take MODIFY only, which replaces every member.  Direct counters and
meters of a default entry are UNIMPLEMENTED, as on bmv2.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar

from finsy.proto import p4i, p4r, rpc_code

from softswitch.errors import RuntimeConfigError
from softswitch.runtime import tables as rt
from softswitch.runtime.externs import CounterData, MeterConfig
from softswitch.runtime.pre import CloneSession
from softswitch.runtime.state import RuntimeState
from softswitch.switch.p4rt import oneshot
from softswitch.switch.p4rt.codec import Schema, decode_bits
from softswitch.switch.p4rt.entries import (
    decode_action,
    decode_fields,
    decode_key,
    decode_replicas,
)
from softswitch.switch.p4rt.roles import RoleConfig, check_write

Undo = Callable[[], None]
T = TypeVar("T")
U = p4r.Update
DEFAULT_ENTRY_RESOURCES = (
    "direct counters and meters of a default entry are not supported (nor by bmv2)"
)
_CODES = {name: number for name, number in rpc_code.Code.items()}
MAX_FAILURES = 64


class DigestConfigs(Protocol):
    def configure(self, digest_id: int, config: p4r.DigestEntry.Config | None) -> None: ...

    def config(self, digest_id: int) -> p4r.DigestEntry.Config | None: ...


@dataclass(slots=True)
class WriteTarget:
    """What a write acts on, and the writer's role (its config None: full access)."""

    schema: Schema
    state: RuntimeState
    digests: DigestConfigs
    role: str = ""
    role_config: RoleConfig | None = None


def _invalid(message: str) -> RuntimeConfigError:
    return RuntimeConfigError("INVALID_ARGUMENT", message)


def error_of(exc: RuntimeConfigError) -> p4r.Error:
    return p4r.Error(canonical_code=_CODES.get(exc.code, rpc_code.UNKNOWN), message=exc.message)


def apply_write(target: WriteTarget, request: p4r.WriteRequest) -> list[p4r.Error] | None:
    """Apply a batch; None when every update succeeded, else one Error per update."""
    atomic = request.atomicity != p4r.WriteRequest.CONTINUE_ON_ERROR
    if request.atomicity not in p4r.WriteRequest.Atomicity.values():
        raise _invalid(f"invalid atomicity {request.atomicity}")
    errors: list[p4r.Error] = []
    undos: list[Undo] = []
    failures = 0
    for update in request.updates:
        try:
            undos.append(apply_update(target, update))
            errors.append(p4r.Error(canonical_code=rpc_code.OK))
        except RuntimeConfigError as exc:
            failures += 1
            errors.append(error_of(exc))
            if atomic or failures == MAX_FAILURES:
                break
    if not failures:
        return None
    if atomic:
        for undo in reversed(undos):
            undo()
        aborted = p4r.Error(canonical_code=rpc_code.ABORTED, message="rolled back")
        for i, error in enumerate(errors):
            if error.canonical_code == rpc_code.OK:
                errors[i] = aborted
    skipped = p4r.Error(
        canonical_code=rpc_code.ABORTED,
        message="not attempted" if atomic else f"not attempted after {MAX_FAILURES} failures",
    )
    errors.extend(skipped for _ in range(len(request.updates) - len(errors)))
    return errors


def apply_update(target: WriteTarget, update: p4r.Update) -> Undo:
    """Apply one update; return how to undo it."""
    if update.type not in (U.INSERT, U.MODIFY, U.DELETE):
        raise _invalid("update type must be INSERT, MODIFY or DELETE")
    kind = update.entity.WhichOneof("entity")
    if kind is None:
        raise _invalid("the update has no entity")
    handler = _HANDLERS.get(kind)
    if handler is None:
        raise RuntimeConfigError("UNIMPLEMENTED", f"writing {kind} is not supported")
    check_write(target.role, target.role_config, update)
    if kind in _MODIFY_ONLY and update.type != U.MODIFY:
        raise _invalid(f"{_MODIFY_ONLY[kind]} can only be modified")
    return handler(target, update.type, getattr(update.entity, kind))


# --- table entries ---------------------------------------------------------------------


def _table_entry(target: WriteTarget, op: int, msg: p4r.TableEntry) -> Undo:
    schema, state = target.schema, target.state
    info = schema.tables.get(msg.table_id)
    table = state.tables[info.preamble.name]
    if msg.is_default_action:
        return _default_entry(target, op, info, table, msg)
    if table.spec.is_const or info.is_const_table:
        raise RuntimeConfigError(
            "PERMISSION_DENIED", f"table {info.preamble.name} has const entries"
        )
    key, priority = decode_key(schema, info, msg.match, msg.priority)
    if op == U.DELETE:
        old = table.delete(rt.TableEntry(matches=key, priority=priority))
        bring_back = _forget_oneshot(table, old)

        def undo_delete() -> None:
            bring_back()
            _reinsert(table, old)

        return undo_delete
    entry, drop_group = _entry_fields(target, info, msg, key, priority)
    try:
        if op == U.INSERT:
            stored = table.insert(entry)

            def undo_insert() -> None:
                _delete(table, stored)
                drop_group()

            return undo_insert
        current = table.get(key, priority)
        previous = _snapshot(table, current)
        table.modify(entry)
    except RuntimeConfigError:
        drop_group()
        raise
    bring_back_old = _forget_oneshot(table, previous)

    def undo_modify() -> None:
        bring_back_old()
        _restore(table, previous)
        drop_group()

    return undo_modify


def _nothing() -> None:
    pass


def _forget_oneshot(table: rt.Table, old: rt.TableEntry) -> Undo:
    """Delete the hidden group of an entry that no longer exists; return how to bring it back."""
    profile = table.profile
    if profile is None or old.group_id is None or not oneshot.is_hidden(old.group_id):
        return _nothing
    hidden = oneshot.snapshot(profile, old.group_id)
    oneshot.delete_group(profile, old.group_id)
    return lambda: oneshot.recreate(profile, hidden)


def _entry_fields(
    target: WriteTarget,
    info: p4i.Table,
    msg: p4r.TableEntry,
    key: tuple[rt.Match | None, ...],
    priority: int,
) -> tuple[rt.TableEntry, Undo]:
    """The runtime entry of a message, and how to drop the one-shot group it made (if any)."""
    name = info.preamble.name
    entry = rt.TableEntry(matches=key, priority=priority, metadata=bytes(msg.metadata))
    which = msg.action.WhichOneof("type")
    profile = target.schema.profile_of(info)
    table = target.state.tables[name]
    if which is None:
        raise _invalid(f"{name}: the entry has no action")
    if which == "action":
        if profile is not None:
            raise _invalid(f"{name} is implemented by {profile.preamble.name}: use a member")
        entry.action = decode_action(target.schema, msg.action.action, info)
    elif which == "action_profile_member_id":
        if profile is None or table.profile is None:
            raise _invalid(f"{name} has no action profile: use a direct action")
        oneshot.check_manual(table.profile)
        entry.member_id = msg.action.action_profile_member_id
    elif which == "action_profile_group_id":
        if profile is None or not profile.with_selector or table.profile is None:
            raise _invalid(f"{name} has no action selector: groups cannot be used")
        oneshot.check_manual(table.profile)
        entry.group_id = msg.action.action_profile_group_id
    _check_entry_extras(target, info, msg, entry)
    if which != "action_profile_action_set":
        return entry, _nothing
    if profile is None or table.profile is None:
        raise _invalid(f"{name} has no action selector: an action set cannot be used")
    entry.group_id, drop = oneshot.create_group(
        target.schema, info, table.profile, msg.action.action_profile_action_set
    )
    return entry, drop


def _check_entry_extras(
    target: WriteTarget, info: p4i.Table, msg: p4r.TableEntry, entry: rt.TableEntry
) -> None:
    """Idle timeout and direct resources of an entry."""
    name = info.preamble.name
    if msg.idle_timeout_ns:
        if info.idle_timeout_behavior != p4i.Table.NOTIFY_CONTROL:
            raise _invalid(f"{name} does not support idle timeouts")
        if msg.idle_timeout_ns < 0:
            raise _invalid(f"{name}: negative idle timeout")
        entry.idle_timeout_ns = msg.idle_timeout_ns
    if msg.HasField("time_since_last_hit"):
        raise _invalid("time_since_last_hit is read-only")
    if msg.HasField("counter_data"):
        if target.schema.direct_counter_of(info) is None:
            raise _invalid(f"{name} has no direct counter")
        entry.counter = CounterData(msg.counter_data.packet_count, msg.counter_data.byte_count)
    has_meter = target.schema.direct_meter_of(info) is not None
    if msg.HasField("meter_config"):
        if not has_meter:
            raise _invalid(f"{name} has no direct meter")
        entry.meter_config = meter_config(msg.meter_config)
    if msg.HasField("meter_counter_data") and not has_meter:
        raise _invalid(f"{name} has no direct meter")


def meter_config(msg: p4r.MeterConfig) -> MeterConfig:
    if msg.eburst:
        raise RuntimeConfigError("UNIMPLEMENTED", "srTCM meters (eburst) are not supported")
    return MeterConfig(msg.cir, msg.cburst, msg.pir, msg.pburst)


def _default_entry(
    target: WriteTarget, op: int, info: p4i.Table, table: rt.Table, msg: p4r.TableEntry
) -> Undo:
    name = info.preamble.name
    if op != U.MODIFY:
        raise _invalid(f"{name}: the default entry can only be modified")
    if msg.match or msg.priority:
        raise _invalid(f"{name}: the default entry has no key and no priority")
    if info.const_default_action_id or table.spec.default_is_const:
        raise RuntimeConfigError("PERMISSION_DENIED", f"{name} has a const default action")
    if msg.HasField("counter_data") or msg.HasField("meter_config"):
        raise RuntimeConfigError("UNIMPLEMENTED", DEFAULT_ENTRY_RESOURCES)
    old = table.default_action
    which = msg.action.WhichOneof("type")
    if which is None:
        table.reset_default()
    elif which == "action":
        table.set_default(decode_action(target.schema, msg.action.action, info, default=True))
    else:
        raise _invalid(f"{name}: the default action must be a direct action")
    return lambda: table.set_default(old)


def _snapshot(table: rt.Table, entry: rt.TableEntry) -> rt.TableEntry:
    counter = entry.counter or CounterData()
    has_counter = table.spec.direct_counter is not None
    return rt.TableEntry(
        matches=entry.matches,
        priority=entry.priority,
        action=entry.action,
        member_id=entry.member_id,
        group_id=entry.group_id,
        idle_timeout_ns=entry.idle_timeout_ns,
        metadata=entry.metadata,
        counter=CounterData(counter.packets, counter.bytes) if has_counter else None,
        meter_config=entry.meter_config,
    )


def _restore(table: rt.Table, snapshot: rt.TableEntry) -> None:
    table.modify(snapshot)


def _reinsert(table: rt.Table, old: rt.TableEntry) -> None:
    counter = old.counter if table.spec.direct_counter is not None else None
    table.insert(replace(old, counter=counter))


def _delete(table: rt.Table, entry: rt.TableEntry) -> None:
    table.delete(rt.TableEntry(matches=entry.matches, priority=entry.priority))


# --- action profiles -------------------------------------------------------------------


def _profile_table(schema: Schema, profile: p4i.ActionProfile) -> p4i.Table | None:
    return schema.tables.by_id.get(profile.table_ids[0]) if profile.table_ids else None


def _member(target: WriteTarget, op: int, msg: p4r.ActionProfileMember) -> Undo:
    info = target.schema.action_profiles.get(msg.action_profile_id)
    profile = target.state.action_profiles[info.preamble.name]
    member_id = msg.member_id
    oneshot.check_manual(profile)
    if op == U.DELETE:
        old = profile.member(member_id)
        profile.delete_member(member_id)
        return lambda: profile.insert_member(member_id, old)
    if not msg.HasField("action"):
        raise _invalid(f"{info.preamble.name}: member {member_id} has no action")
    call = decode_action(target.schema, msg.action, _profile_table(target.schema, info))
    if op == U.INSERT:
        profile.insert_member(member_id, call)
        return lambda: profile.delete_member(member_id)
    previous = profile.member(member_id)
    profile.modify_member(member_id, call)
    return lambda: profile.modify_member(member_id, previous)


def _group(target: WriteTarget, op: int, msg: p4r.ActionProfileGroup) -> Undo:
    from softswitch.runtime.profiles import ActionSelector

    info = target.schema.action_profiles.get(msg.action_profile_id)
    selector = target.state.action_profiles[info.preamble.name]
    if not info.with_selector or not isinstance(selector, ActionSelector):
        raise _invalid(f"{info.preamble.name} is not an action selector")
    oneshot.check_manual(selector)
    group_id = msg.group_id
    if op == U.DELETE:
        old = selector.group(group_id)
        selector.delete_group(group_id)
        return lambda: selector.insert_group(group_id, dict(old.members), old.max_size)
    members: dict[int, int] = {}
    for member in msg.members:
        if member.member_id in members:
            raise _invalid(f"{info.preamble.name}: member {member.member_id} is repeated")
        if member.weight < 0:
            raise _invalid(f"{info.preamble.name}: negative weight")
        members[member.member_id] = member.weight or 1
    if msg.max_size < 0:
        raise _invalid(f"{info.preamble.name}: negative max_size")
    if info.max_group_size and msg.max_size > info.max_group_size:
        raise _invalid(
            f"{info.preamble.name}: max_size {msg.max_size} exceeds {info.max_group_size}"
        )
    if op == U.INSERT:
        selector.insert_group(group_id, members, msg.max_size)
        return lambda: selector.delete_group(group_id)
    previous = selector.group(group_id)
    selector.modify_group(group_id, members)
    return lambda: selector.modify_group(group_id, dict(previous.members))


# --- counters, meters, registers ---------------------------------------------------------


def _index(msg: p4r.CounterEntry | p4r.MeterEntry | p4r.RegisterEntry) -> int | None:
    if not msg.HasField("index"):
        return None
    if msg.index.index < 0:
        raise RuntimeConfigError("OUT_OF_RANGE", f"negative index {msg.index.index}")
    return msg.index.index


def _restoring(before: Sequence[T], put: Callable[[int, T], object]) -> Undo:
    """An undo that puts back every cell of a counter, meter or register array."""

    def undo() -> None:
        for i, old in enumerate(before):
            put(i, old)

    return undo


def _counter(target: WriteTarget, op: int, msg: p4r.CounterEntry) -> Undo:
    info = target.schema.counters.get(msg.counter_id)
    counter = target.state.counters[info.preamble.name]
    index = _index(msg)
    before = counter.read_all()
    counter.write(index, CounterData(msg.data.packet_count, msg.data.byte_count))
    return _restoring(before, counter.write)


def _direct_entry(
    target: WriteTarget,
    msg: p4r.TableEntry,
    attached: Callable[[p4i.Table], p4i.DirectCounter | p4i.DirectMeter | None],
    what: str,
) -> tuple[str, rt.TableEntry]:
    """The entry ``msg`` names and the name of its table's direct counter or meter
    (``attached`` finds it, ``what`` names it in the error when there is none)."""
    info = target.schema.tables.get(msg.table_id)
    table = target.state.tables[info.preamble.name]
    if msg.is_default_action:
        raise RuntimeConfigError("UNIMPLEMENTED", DEFAULT_ENTRY_RESOURCES)
    key, priority = decode_key(target.schema, info, msg.match, msg.priority)
    entry = table.get(key, priority)
    extern = attached(info)
    if extern is None:
        raise _invalid(f"{info.preamble.name} has no {what}")
    return extern.preamble.name, entry


def _direct_counter(target: WriteTarget, op: int, msg: p4r.DirectCounterEntry) -> Undo:
    attached = target.schema.direct_counter_of
    name, entry = _direct_entry(target, msg.table_entry, attached, "direct counter")
    current = entry.counter or CounterData()
    old = CounterData(current.packets, current.bytes)
    dc = target.state.direct_counters[name]
    dc.write(entry, CounterData(msg.data.packet_count, msg.data.byte_count))
    return lambda: dc.write(entry, old)


def _meter(target: WriteTarget, op: int, msg: p4r.MeterEntry) -> Undo:
    info = target.schema.meters.get(msg.meter_id)
    meter = target.state.meters[info.preamble.name]
    index = _index(msg)
    config = meter_config(msg.config) if msg.HasField("config") else None
    before = [meter.get_config(i) for i in range(meter.size)]
    meter.set_config(index, config)
    return _restoring(before, meter.set_config)


def _direct_meter(target: WriteTarget, op: int, msg: p4r.DirectMeterEntry) -> Undo:
    attached = target.schema.direct_meter_of
    name, entry = _direct_entry(target, msg.table_entry, attached, "direct meter")
    dm = target.state.direct_meters[name]
    old = dm.get_config(entry)
    dm.set_config(entry, meter_config(msg.config) if msg.HasField("config") else None)
    return lambda: dm.set_config(entry, old)


def _register(target: WriteTarget, op: int, msg: p4r.RegisterEntry) -> Undo:
    info = target.schema.registers.get(msg.register_id)
    register = target.state.registers[info.preamble.name]
    index = _index(msg)
    if msg.data.WhichOneof("data") != "bitstring":
        raise RuntimeConfigError("UNIMPLEMENTED", "only bitstring register values are supported")
    value = decode_bits(msg.data.bitstring, register.width, info.preamble.name)
    before = register.get_all()
    register.set(index, value)
    return _restoring(before, register.set)


# --- packet replication engine, digests ----------------------------------------------------


def _pre(target: WriteTarget, op: int, msg: p4r.PacketReplicationEngineEntry) -> Undo:
    pre = target.state.pre
    which = msg.WhichOneof("type")
    if which == "multicast_group_entry":
        group = msg.multicast_group_entry
        mgid = group.multicast_group_id
        if mgid == 0:
            raise _invalid("multicast group id 0 is reserved")
        if op == U.DELETE:
            old = pre.multicast_group(mgid)
            pre.delete_multicast_group(mgid)
            return lambda: pre.insert_multicast_group(mgid, old)
        replicas = decode_replicas(group.replicas, f"multicast group {mgid}")
        if op == U.INSERT:
            pre.insert_multicast_group(mgid, replicas)
            return lambda: pre.delete_multicast_group(mgid)
        previous = pre.multicast_group(mgid)
        pre.modify_multicast_group(mgid, replicas)
        return lambda: pre.modify_multicast_group(mgid, previous)
    if which == "clone_session_entry":
        clone = msg.clone_session_entry
        sid = clone.session_id
        if op == U.DELETE:
            old_session = pre.clone_session(sid)
            if old_session is None:
                raise RuntimeConfigError("NOT_FOUND", f"clone session {sid} does not exist")
            pre.delete_clone_session(sid)
            return lambda: pre.insert_clone_session(old_session)
        if clone.packet_length_bytes < 0:
            raise _invalid(f"clone session {sid}: negative packet_length_bytes")
        session = CloneSession(
            sid,
            decode_replicas(clone.replicas, f"clone session {sid}"),
            clone.class_of_service,
            clone.packet_length_bytes,
        )
        if op == U.INSERT:
            pre.insert_clone_session(session)
            return lambda: pre.delete_clone_session(sid)
        previous_session = pre.clone_session(sid)
        pre.modify_clone_session(session)
        if previous_session is None:
            return lambda: None
        return lambda: pre.modify_clone_session(previous_session)
    raise _invalid("the replication engine entry is empty")


def _digest(target: WriteTarget, op: int, msg: p4r.DigestEntry) -> Undo:
    info = target.schema.digests.get(msg.digest_id)
    ident = info.preamble.id
    old = target.digests.config(ident)
    if op == U.INSERT and old is not None:
        raise RuntimeConfigError("ALREADY_EXISTS", f"digest {info.preamble.name} is configured")
    if op != U.INSERT and old is None:
        raise RuntimeConfigError("NOT_FOUND", f"digest {info.preamble.name} is not configured")
    if op == U.DELETE:
        target.digests.configure(ident, None)
    else:
        config = msg.config
        if config.max_timeout_ns < 0 or config.max_list_size < 0 or config.ack_timeout_ns < 0:
            raise _invalid(f"digest {info.preamble.name}: negative config value")
        target.digests.configure(ident, config)
    return lambda: target.digests.configure(ident, old)


def _value_set(target: WriteTarget, op: int, msg: p4r.ValueSetEntry) -> Undo:
    info = target.schema.value_sets.get(msg.value_set_id)
    name = info.preamble.name
    if op != U.MODIFY:
        raise _invalid(f"value set {name}: only MODIFY is allowed (it replaces every member)")
    value_set = target.state.value_sets.get(name)
    if value_set is None:
        raise RuntimeConfigError("UNIMPLEMENTED", f"value set {name} is not programmable here")
    members = [decode_fields(name, info.match, m.match) for m in msg.members]
    old = value_set.members
    value_set.set_members(members)
    return lambda: value_set.set_members(old)


# The entities that exist with the program and are only ever modified, as errors name them.
_MODIFY_ONLY = {
    "counter_entry": "a counter entry",
    "direct_counter_entry": "a direct counter entry",
    "meter_entry": "a meter entry",
    "direct_meter_entry": "a direct meter entry",
    "register_entry": "a register entry",
}

_HANDLERS: dict[str, Callable[[WriteTarget, int, object], Undo]] = {
    "table_entry": _table_entry,  # type: ignore[dict-item]
    "action_profile_member": _member,  # type: ignore[dict-item]
    "action_profile_group": _group,  # type: ignore[dict-item]
    "counter_entry": _counter,  # type: ignore[dict-item]
    "direct_counter_entry": _direct_counter,  # type: ignore[dict-item]
    "meter_entry": _meter,  # type: ignore[dict-item]
    "direct_meter_entry": _direct_meter,  # type: ignore[dict-item]
    "register_entry": _register,  # type: ignore[dict-item]
    "packet_replication_engine_entry": _pre,  # type: ignore[dict-item]
    "digest_entry": _digest,  # type: ignore[dict-item]
    "value_set_entry": _value_set,  # type: ignore[dict-item]
}
