"""Table entries, actions and replicas: P4Runtime messages <-> runtime objects.

Shared by the write and read translations.  Decoding checks everything the
P4Runtime spec asks a server to check of a key and an action (the codes are
the spec's and BMv2's):

- a match field id the table lacks, a repeated field, an exact field left out,
  a match kind that is not the field's: INVALID_ARGUMENT;
- an LPM prefix of 0 or beyond the width, an LPM value or ternary value with
  bits outside the prefix or mask, a zero ternary mask, a range with low > high
  or covering everything ("don't care" must be expressed by omission):
  INVALID_ARGUMENT;
- priority: required (> 0) when a key has a ternary, range or optional field,
  forbidden otherwise: INVALID_ARGUMENT;
- an action the table does not list, a @defaultonly action in an entry, a
  @tableonly one as default, missing or repeated parameters: INVALID_ARGUMENT;
- a value wider than its field: OUT_OF_RANGE.

Encoding produces canonical bytestrings.
"""

from __future__ import annotations

from collections.abc import Sequence

from finsy.proto import p4i, p4r
from google.protobuf.internal.containers import RepeatedCompositeFieldContainer

from softswitch.errors import RuntimeConfigError
from softswitch.runtime.pre import Replica
from softswitch.runtime.tables import (
    ActionCall,
    Exact,
    Lpm,
    Match,
    Optional,
    Range,
    Ternary,
)
from softswitch.switch.p4rt.codec import Schema, decode_bits, encode_bits

MF = p4i.MatchField
_KIND_OF = {
    MF.EXACT: "exact",
    MF.LPM: "lpm",
    MF.TERNARY: "ternary",
    MF.RANGE: "range",
    MF.OPTIONAL: "optional",
}
_PRIORITY_KINDS = (MF.TERNARY, MF.RANGE, MF.OPTIONAL)


def _invalid(message: str) -> RuntimeConfigError:
    return RuntimeConfigError("INVALID_ARGUMENT", message)


def needs_priority(table: p4i.Table) -> bool:
    return any(mf.match_type in _PRIORITY_KINDS for mf in table.match_fields)


def decode_key(
    schema: Schema, table: p4i.Table, matches: Sequence[p4r.FieldMatch], priority: int
) -> tuple[tuple[Match | None, ...], int]:
    """The runtime key (in P4Info field order) and priority of a P4Runtime key."""
    name = table.preamble.name
    for field_match in matches:
        schema.match_field(table, field_match.field_id)
    key = decode_fields(name, table.match_fields, matches)
    if needs_priority(table):
        if priority <= 0:
            raise _invalid(f"{name}: a ternary, range or optional key needs a priority > 0")
    elif priority != 0:
        raise _invalid(f"{name}: priority must be 0 for exact and LPM keys")
    return key, priority


def decode_fields(
    name: str, fields: Sequence[p4i.MatchField], matches: Sequence[p4r.FieldMatch]
) -> tuple[Match | None, ...]:
    """Match values in ``fields`` order; an omitted non-exact field is a wildcard (None)."""
    known = {mf.id for mf in fields}
    given: dict[int, p4r.FieldMatch] = {}
    for field_match in matches:
        if field_match.field_id not in known:
            raise _invalid(f"Invalid P4 id: {name} has no match field {field_match.field_id}")
        if field_match.field_id in given:
            raise _invalid(f"{name}: match field {field_match.field_id} is given twice")
        given[field_match.field_id] = field_match
    key: list[Match | None] = []
    for mf in fields:
        fm = given.get(mf.id)
        if fm is None:
            if mf.match_type == MF.EXACT:
                raise _invalid(f"{name}: exact match field {mf.name} is missing")
            key.append(None)
        else:
            key.append(_decode_match(name, mf, fm))
    return tuple(key)


def _decode_match(table: str, mf: p4i.MatchField, fm: p4r.FieldMatch) -> Match:
    kind = fm.WhichOneof("field_match_type")
    expected = _KIND_OF.get(mf.match_type)
    what = f"{table}: field {mf.name}"
    if kind != expected:
        raise _invalid(f"{what} is matched as {expected}, not {kind}")
    width = mf.bitwidth
    if kind == "exact":
        return Exact(decode_bits(fm.exact.value, width, what))
    if kind == "lpm":
        value = decode_bits(fm.lpm.value, width, what)
        plen = fm.lpm.prefix_len
        if not 0 < plen <= width:
            raise _invalid(f"{what}: prefix length {plen} is not in [1, {width}] (omit for 0)")
        if value & ((1 << (width - plen)) - 1):
            raise _invalid(f"{what}: LPM value has bits set beyond the prefix length {plen}")
        return Lpm(value, plen)
    if kind == "ternary":
        value = decode_bits(fm.ternary.value, width, what)
        mask = decode_bits(fm.ternary.mask, width, what)
        if mask == 0:
            raise _invalid(f"{what}: a zero ternary mask must be expressed by omitting the field")
        if value & ~mask:
            raise _invalid(f"{what}: ternary value has bits set outside the mask")
        return Ternary(value, mask)
    if kind == "range":
        low = decode_bits(fm.range.low, width, what)
        high = decode_bits(fm.range.high, width, what)
        if low > high:
            raise _invalid(f"{what}: range low {low} is above high {high}")
        if low == 0 and high == (1 << width) - 1:
            raise _invalid(f"{what}: a full range must be expressed by omitting the field")
        return Range(low, high)
    return Optional(decode_bits(fm.optional.value, width, what))


def encode_key(table: p4i.Table, key: Sequence[Match | None], out: p4r.TableEntry) -> None:
    """Fill ``out.match`` with the canonical form of a runtime key."""
    encode_fields(table.match_fields, key, out.match)


def encode_fields(
    fields: Sequence[p4i.MatchField],
    key: Sequence[Match | None],
    out: RepeatedCompositeFieldContainer[p4r.FieldMatch],
) -> None:
    """Append the canonical FieldMatch of each non-wildcard value to ``out``."""
    for mf, match in zip(fields, key, strict=False):
        if match is None:
            continue
        fm = p4r.FieldMatch(field_id=mf.id)
        if isinstance(match, Exact):
            fm.exact.value = encode_bits(match.value)
        elif isinstance(match, Lpm):
            fm.lpm.value = encode_bits(match.value)
            fm.lpm.prefix_len = match.prefix_len
        elif isinstance(match, Ternary):
            fm.ternary.value = encode_bits(match.value)
            fm.ternary.mask = encode_bits(match.mask)
        elif isinstance(match, Range):
            fm.range.low = encode_bits(match.low)
            fm.range.high = encode_bits(match.high)
        else:
            fm.optional.value = encode_bits(match.value)
        out.append(fm)


def decode_action(
    schema: Schema, msg: p4r.Action, table: p4i.Table | None, *, default: bool = False
) -> ActionCall:
    """A runtime ActionCall; ``table`` checks the action belongs to it and its scope."""
    action = schema.actions.get(msg.action_id)
    name = action.preamble.name
    if table is not None:
        ref = schema.action_ref(table, msg.action_id)
        if ref is None:
            raise _invalid(f"action {name} is not an action of table {table.preamble.name}")
        if default and ref.scope == p4i.ActionRef.TABLE_ONLY:
            raise _invalid(f"action {name} is @tableonly in {table.preamble.name}")
        if not default and ref.scope == p4i.ActionRef.DEFAULT_ONLY:
            raise _invalid(f"action {name} is @defaultonly in {table.preamble.name}")
    values: dict[int, int] = {}
    for param in msg.params:
        spec = schema.param(action, param.param_id)
        if param.param_id in values:
            raise _invalid(f"{name}: parameter {spec.name} is given twice")
        values[param.param_id] = decode_bits(param.value, spec.bitwidth, f"{name}.{spec.name}")
    missing = [p.name for p in action.params if p.id not in values]
    if missing:
        raise _invalid(f"{name}: missing parameter(s) {', '.join(missing)}")
    return ActionCall(name, tuple(values[p.id] for p in action.params))


def encode_action(schema: Schema, call: ActionCall, out: p4r.Action) -> None:
    action = schema.actions.by_name.get(call.name)
    if action is None:
        raise RuntimeConfigError("INTERNAL", f"action {call.name} is not in the P4Info")
    out.action_id = action.preamble.id
    for param, value in zip(action.params, call.args, strict=False):
        out.params.add(param_id=param.id, value=encode_bits(value))


def decode_replicas(replicas: Sequence[p4r.Replica], what: str) -> tuple[Replica, ...]:
    seen: set[tuple[int, int]] = set()
    out: list[Replica] = []
    for replica in replicas:
        if replica.WhichOneof("port_kind") == "port":
            port = decode_bits(replica.port, 32, f"{what}: replica port")
        else:
            port = replica.egress_port
        pair = (port, replica.instance)
        if pair in seen:
            raise _invalid(
                f"{what}: replica (port {port}, instance {replica.instance}) is repeated"
            )
        seen.add(pair)
        out.append(Replica(port, replica.instance))
    return tuple(out)


def encode_replicas(
    replicas: Sequence[Replica], out: RepeatedCompositeFieldContainer[p4r.Replica]
) -> None:
    for replica in replicas:
        out.append(p4r.Replica(port=encode_bits(replica.egress_port), instance=replica.instance))
