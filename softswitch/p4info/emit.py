"""Model -> ``p4.config.v1.P4Info``, and P4Info -> the bytes p4c writes.

The writer follows p4c's ``P4RuntimeAnalyzer`` and its v1model handler:

- ids and aliases come from :mod:`softswitch.p4info.ids` over every object of
  the model (hidden ones included);
- every preamble carries the annotations except ``@name``, ``@id``, ``@brief``
  and ``@description`` (the last two become ``doc``); structured annotations go
  to ``structured_annotations``;
- match fields, action parameters and packet metadata are numbered 1..n in
  declaration order, except that an ``@id`` on one of them takes that number
  and the others skip it;
- a table's action refs keep their annotations (``@tableonly`` and
  ``@defaultonly`` also set the scope);
- actions are written once each, in model order; an action profile lists the
  ids of the tables using it in table-*name* order; direct counters and meters
  follow their tables.

Text output is protobuf text format as C++ ``TextFormat::Printer`` prints it
(Python's printer with ``as_utf8=False`` produces the same bytes), after the two
header lines that p4c writes for ``.txtpb`` files.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

from finsy.proto import p4i, p4t
from google.protobuf import json_format, text_format

from softswitch.errors import Loc
from softswitch.p4info import model as info_model
from softswitch.p4info.ids import Prefix, Symbol, SymbolTable, assign_ids

V = TypeVar("V")

TEXT_HEADER = "# proto-file: p4/config/v1/p4info.proto\n# proto-message: p4.config.v1.P4Info\n\n"

_DROPPED_ANNOTATIONS = frozenset({"name", "id", "brief", "description"})

_SELECTOR_ANNOTATIONS = frozenset(
    {"max_group_size", "selector_size_semantics", "max_member_weight"}
)

_MATCH_TYPES = {
    "exact": p4i.MatchField.EXACT,
    "lpm": p4i.MatchField.LPM,
    "ternary": p4i.MatchField.TERNARY,
    "range": p4i.MatchField.RANGE,
    "optional": p4i.MatchField.OPTIONAL,
}

_COUNTER_UNITS = {
    "packets": p4i.CounterSpec.PACKETS,
    "bytes": p4i.CounterSpec.BYTES,
    "packets_and_bytes": p4i.CounterSpec.BOTH,
}

_METER_UNITS = {"packets": p4i.MeterSpec.PACKETS, "bytes": p4i.MeterSpec.BYTES}


class _Named(Protocol):
    """A model entity: what its symbol and its preamble are made of."""

    @property
    def name(self) -> str: ...

    @property
    def explicit_id(self) -> int | None: ...

    @property
    def annotations(self) -> info_model.Annotations: ...

    @property
    def loc(self) -> Loc: ...


# ---------------------------------------------------------------------------
# public API


def symbols_of(model: info_model.Model) -> Iterator[Symbol]:
    """Every control-plane symbol of ``model``, in p4c's collection order."""
    kinds: tuple[tuple[Prefix, Sequence[_Named]], ...] = (
        (Prefix.ACTION, model.actions),
        (Prefix.TABLE, model.tables),
        (Prefix.VALUE_SET, model.value_sets),
        (Prefix.ACTION_PROFILE, model.action_profiles),
        (Prefix.COUNTER, model.counters),
        (Prefix.DIRECT_COUNTER, model.direct_counters),
        (Prefix.METER, model.meters),
        (Prefix.DIRECT_METER, model.direct_meters),
        (Prefix.REGISTER, model.registers),
        (Prefix.DIGEST, model.digests),
        (Prefix.CONTROLLER_HEADER, model.controller_headers),
    )
    for prefix, entities in kinds:
        for e in entities:
            yield Symbol(prefix, e.name, e.explicit_id, e.loc)


def build_p4info(model: info_model.Model) -> p4i.P4Info:
    """The P4Info message of ``model``; raises P4SourceError on conflicting ``@id``\\ s."""
    symbols = assign_ids(symbols_of(model))
    info = p4i.P4Info()
    _add_tables(info, model, symbols)
    _add_actions(info, model, symbols)
    _add_action_profiles(info, model, symbols)
    for c in model.counters:
        _add_unit_extern(info.counters.add(), c, Prefix.COUNTER, _counter_unit(c), symbols)
    for dc in model.direct_counters:
        _add_unit_extern(
            info.direct_counters.add(), dc, Prefix.DIRECT_COUNTER, _counter_unit(dc), symbols
        )
    for mt in model.meters:
        _add_unit_extern(info.meters.add(), mt, Prefix.METER, _meter_unit(mt), symbols)
    for dm in model.direct_meters:
        _add_unit_extern(
            info.direct_meters.add(), dm, Prefix.DIRECT_METER, _meter_unit(dm), symbols
        )
    for ch in model.controller_headers:
        if not ch.hidden:
            _add_controller_header(info.controller_packet_metadata.add(), ch, symbols)
    for vs in model.value_sets:
        _add_value_set(info.value_sets.add(), vs, symbols)
    for r in model.registers:
        _add_register(info.registers.add(), r, symbols)
    seen_digests: set[str] = set()
    for d in model.digests:
        if d.name not in seen_digests:
            seen_digests.add(d.name)
            _add_digest(info.digests.add(), d, symbols)
    if model.pkg_info is not None:
        _set_pkg_info(info.pkg_info, model.pkg_info)
    if model.type_info is not None:
        info.type_info.SetInParent()
        _set_type_info(info.type_info, model.type_info)
    return info


def to_text(info: p4i.P4Info) -> str:
    """``info`` in protobuf text format, byte for byte as p4c writes a ``.txtpb`` file."""
    return TEXT_HEADER + text_format.MessageToString(info, as_utf8=False)


def to_json(info: p4i.P4Info) -> str:
    """``info`` as protobuf JSON (camelCase names, one-space indentation, as p4c)."""
    return json_format.MessageToJson(info, indent=1)


def to_binary(info: p4i.P4Info) -> bytes:
    """``info`` in the protobuf wire format."""
    return info.SerializeToString(deterministic=True)


# ---------------------------------------------------------------------------
# annotations, preambles, field ids


def _annotate(
    message: Any, annotations: info_model.Annotations, skip: Callable[[str], bool] = lambda _: False
) -> None:
    for a in annotations.items:
        if a.name in _DROPPED_ANNOTATIONS or skip(a.name):
            continue
        message.annotations.append(a.text)
    for s in annotations.structured:
        if s.name in _DROPPED_ANNOTATIONS or skip(s.name):
            continue
        _structured(message.structured_annotations.add(), s)


def _expression(expr: p4t.Expression, value: info_model.ExprValue) -> None:
    if isinstance(value, bool):
        expr.bool_value = value
    elif isinstance(value, int):
        expr.int64_value = value
    else:
        expr.string_value = value


def _structured(message: p4t.StructuredAnnotation, s: info_model.StructuredAnnotation) -> None:
    message.name = s.name
    if s.expressions:
        for value in s.expressions:
            _expression(message.expression_list.expressions.add(), value)
    elif s.kv_pairs:
        for key, value in s.kv_pairs:
            kv = message.kv_pair_list.kv_pairs.add()
            kv.key = key
            _expression(kv.value, value)


def _document(message: Any, annotations: info_model.Annotations) -> None:
    doc = annotations.doc
    if doc is None or (doc.brief is None and doc.description is None):
        return
    message.doc.SetInParent()
    if doc.brief is not None:
        message.doc.brief = doc.brief
    if doc.description is not None:
        message.doc.description = doc.description


def _preamble(
    preamble: p4i.Preamble,
    id_: int,
    name: str,
    alias: str,
    annotations: info_model.Annotations,
    *,
    skip: Callable[[str], bool] = lambda _: False,
) -> None:
    preamble.id = id_
    preamble.name = name
    preamble.alias = alias
    _annotate(preamble, annotations, skip)
    _document(preamble, annotations)


def _entity_preamble(
    preamble: p4i.Preamble,
    prefix: Prefix,
    entity: _Named,
    symbols: SymbolTable,
    *,
    skip: Callable[[str], bool] = lambda _: False,
) -> None:
    """The preamble of a model entity named by its control-plane name."""
    _preamble(
        preamble,
        symbols.id_of(prefix, entity.name),
        entity.name,
        symbols.alias_of(entity.name),
        entity.annotations,
        skip=skip,
    )


def field_ids(explicit: Iterable[int | None]) -> list[int]:
    """Ids of fields numbered 1..n in order, ``@id``\\ s taken as given (p4c's FieldIdAllocator).

    A field without ``@id`` gets its 1-based position unless that number is
    taken, then the next free one; a field with ``@id`` still uses up a position.
    """
    wanted = list(explicit)
    taken = {e for e in wanted if e is not None}
    ids: list[int] = []
    index = 1
    for e in wanted:
        if e is not None:
            ids.append(e)
            index += 1
            continue
        while index in taken:
            index += 1
        ids.append(index)
        taken.add(index)
    return ids


def _width_bytes(width: int) -> int:
    return max(1, (width + 7) // 8)


def _bytes_of(value: int, width: int) -> bytes:
    return (value & ((1 << width) - 1) if width else 0).to_bytes(_width_bytes(width), "big")


# ---------------------------------------------------------------------------
# tables and actions


def _scope(annotations: info_model.Annotations) -> int:
    if annotations.has("tableonly"):
        return int(p4i.ActionRef.TABLE_ONLY)
    if annotations.has("defaultonly"):
        return int(p4i.ActionRef.DEFAULT_ONLY)
    return int(p4i.ActionRef.TABLE_AND_DEFAULT)


def _match_field(
    message: p4i.MatchField,
    f: info_model.MatchField,
    id_: int,
    *,
    skip: Callable[[str], bool] = lambda _: False,
) -> None:
    """A table's key field or a value set's field; ``skip`` leaves annotations out.

    A value set's unnamed field (its ``bit<W>`` element) has the name "", which
    proto3 does not write.
    """
    message.id = id_
    message.name = f.name
    _annotate(message, f.annotations, skip)
    _document(message, f.annotations)
    message.bitwidth = f.bitwidth
    match_type = _MATCH_TYPES.get(f.match_kind)
    if match_type is not None:
        message.match_type = match_type
    else:
        message.other_match_type = f.match_kind
    if f.type_name is not None:
        message.type_name.name = f.type_name


def _add_tables(info: p4i.P4Info, model: info_model.Model, symbols: SymbolTable) -> None:
    actions = {a.name: a for a in model.actions}
    for t in model.tables:
        if t.hidden:
            continue
        table = info.tables.add()
        _entity_preamble(table.preamble, Prefix.TABLE, t, symbols)
        ids = field_ids(f.explicit_id for f in t.match_fields)
        for f, id_ in zip(t.match_fields, ids, strict=True):
            if f.match_kind != "selector":
                _match_field(table.match_fields.add(), f, id_)
        for ref in t.action_refs:
            action_ref = table.action_refs.add()
            action_ref.id = symbols.id_of(Prefix.ACTION, ref.name)
            _annotate(action_ref, ref.annotations)
            action_ref.scope = _scope(ref.annotations)  # type: ignore[assignment]
        if t.default_action is not None:
            default_id = symbols.id_of(Prefix.ACTION, t.default_action.name)
            if t.default_action_const:
                table.const_default_action_id = default_id
            initial = table.initial_default_action
            initial.action_id = default_id
            params = actions[t.default_action.name].params
            param_ids = field_ids(p.explicit_id for p in params)
            for param_id, (width, value) in zip(param_ids, t.default_action.args, strict=False):
                arg = initial.arguments.add()
                arg.param_id = param_id
                arg.value = _bytes_of(value, width)
        if t.implementation is not None:
            table.implementation_id = symbols.id_of(Prefix.ACTION_PROFILE, t.implementation)
        if t.direct_counter is not None:
            table.direct_resource_ids.append(symbols.id_of(Prefix.DIRECT_COUNTER, t.direct_counter))
        if t.direct_meter is not None:
            table.direct_resource_ids.append(symbols.id_of(Prefix.DIRECT_METER, t.direct_meter))
        table.size = t.size
        if t.idle_timeout:
            table.idle_timeout_behavior = p4i.Table.NOTIFY_CONTROL
        if t.is_const_table:
            table.is_const_table = True
        if t.has_initial_entries:
            table.has_initial_entries = True


def _add_actions(info: p4i.P4Info, model: info_model.Model, symbols: SymbolTable) -> None:
    written: set[str] = set()
    for a in model.actions:
        if a.hidden or a.name in written:
            continue
        written.add(a.name)
        action = info.actions.add()
        _entity_preamble(action.preamble, Prefix.ACTION, a, symbols)
        ids = field_ids(p.explicit_id for p in a.params)
        for p, id_ in zip(a.params, ids, strict=True):
            param = action.params.add()
            param.id = id_
            param.name = p.name
            _annotate(param, p.annotations)
            _document(param, p.annotations)
            if p.bitwidth is not None:
                param.bitwidth = p.bitwidth
            if p.type_name is not None:
                param.type_name.name = p.type_name


def _add_action_profiles(info: p4i.P4Info, model: info_model.Model, symbols: SymbolTable) -> None:
    users: dict[str, set[str]] = {}
    for t in model.tables:
        if t.implementation is not None:
            users.setdefault(t.implementation, set()).add(t.name)
    for ap in model.action_profiles:
        profile = info.action_profiles.add()
        _entity_preamble(
            profile.preamble,
            Prefix.ACTION_PROFILE,
            ap,
            symbols,
            skip=lambda name: name in _SELECTOR_ANNOTATIONS,
        )
        for table_name in sorted(users.get(ap.name, ()), key=lambda n: n.encode("utf-8")):
            profile.table_ids.append(symbols.id_of(Prefix.TABLE, table_name))
        if ap.with_selector:
            profile.with_selector = True
        profile.size = ap.size
        if ap.with_selector and ap.max_group_size is not None:
            profile.max_group_size = ap.max_group_size
        semantics = ap.selector_size_semantics
        if semantics is None and ap.max_group_size is not None:
            semantics = "sum_of_weights"
        if ap.with_selector and semantics == "sum_of_weights":
            profile.sum_of_weights.SetInParent()
        elif ap.with_selector and semantics == "sum_of_members":
            profile.sum_of_members.SetInParent()
            if ap.max_member_weight is not None:
                profile.sum_of_members.max_member_weight = ap.max_member_weight


# ---------------------------------------------------------------------------
# externs


def _add_unit_extern(
    message: Any,
    extern: info_model.ExternArray | info_model.DirectExtern,
    prefix: Prefix,
    unit: int,
    symbols: SymbolTable,
) -> None:
    """A counter or meter of ``unit``: an array of its size, or a direct one on its table."""
    _entity_preamble(message.preamble, prefix, extern, symbols)
    message.spec.unit = unit
    if isinstance(extern, info_model.DirectExtern):
        message.direct_table_id = symbols.id_of(Prefix.TABLE, extern.table)
        return
    message.size = extern.size
    if extern.index_type_name is not None:
        message.index_type_name.name = extern.index_type_name


def _counter_unit(counter: info_model.ExternArray | info_model.DirectExtern) -> int:
    return _COUNTER_UNITS.get(counter.unit, p4i.CounterSpec.UNSPECIFIED)


def _meter_unit(meter: info_model.ExternArray | info_model.DirectExtern) -> int:
    return _METER_UNITS.get(meter.unit, p4i.MeterSpec.UNSPECIFIED)


def _add_register(register: p4i.Register, r: info_model.Register, symbols: SymbolTable) -> None:
    _entity_preamble(register.preamble, Prefix.REGISTER, r, symbols)
    _data_type(register.type_spec, r.type_spec)
    register.size = r.size
    if r.index_type_name is not None:
        register.index_type_name.name = r.index_type_name


def _add_digest(digest: p4i.Digest, d: info_model.Digest, symbols: SymbolTable) -> None:
    _entity_preamble(digest.preamble, Prefix.DIGEST, d, symbols)
    _data_type(digest.type_spec, d.type_spec)


def _add_controller_header(
    header: p4i.ControllerPacketMetadata, ch: info_model.ControllerHeader, symbols: SymbolTable
) -> None:
    id_ = symbols.id_of(Prefix.CONTROLLER_HEADER, ch.name)
    _preamble(header.preamble, id_, ch.controller_name, ch.controller_name, ch.annotations)
    ids = field_ids(f.explicit_id for f in ch.metadata)
    for f, field_id in zip(ch.metadata, ids, strict=True):
        if f.hidden:
            continue
        metadata = header.metadata.add()
        metadata.id = field_id
        metadata.name = f.name
        _annotate(metadata, f.annotations)
        metadata.bitwidth = f.bitwidth
        if f.type_name is not None:
            metadata.type_name.name = f.type_name


def _add_value_set(value_set: p4i.ValueSet, vs: info_model.ValueSet, symbols: SymbolTable) -> None:
    _entity_preamble(value_set.preamble, Prefix.VALUE_SET, vs, symbols)
    ids = field_ids(f.explicit_id for f in vs.matches)
    for f, field_id in zip(vs.matches, ids, strict=True):
        _match_field(value_set.match.add(), f, field_id, skip=lambda name: name == "match")
    value_set.size = vs.size


def _set_pkg_info(pkg: p4i.PkgInfo, info: info_model.PkgInfo) -> None:
    pkg.SetInParent()
    for key in ("name", "version", "organization", "contact", "url"):
        value = getattr(info, key)
        if value:
            setattr(pkg, key, value)
    _annotate(pkg, info.annotations, skip=lambda name: name == "pkginfo")
    _document(pkg, info.annotations)
    pkg.arch = info.arch


# ---------------------------------------------------------------------------
# types


def _bitstring(
    spec: p4t.P4BitstringLikeTypeSpec, t: info_model.BitsType | info_model.VarbitType
) -> None:
    if isinstance(t, info_model.VarbitType):
        spec.varbit.max_bitwidth = t.max_width
    elif t.signed:
        spec.int.bitwidth = t.width
    else:
        spec.bit.bitwidth = t.width


def _data_type(spec: p4t.P4DataTypeSpec, t: info_model.DataType) -> None:
    if isinstance(t, info_model.BitsType | info_model.VarbitType):
        _bitstring(spec.bitstring, t)
    elif isinstance(t, info_model.BoolType):
        spec.bool.SetInParent()
    elif isinstance(t, info_model.ErrorType):
        spec.error.SetInParent()
    elif isinstance(t, info_model.NamedType):
        getattr(spec, t.kind).name = t.name
    elif isinstance(t, info_model.TupleType):
        spec.tuple.SetInParent()
        for member in t.members:
            _data_type(spec.tuple.members.add(), member)
    elif t.kind == "header":
        spec.header_stack.header.name = t.name
        spec.header_stack.size = t.size
    else:
        spec.header_union_stack.header_union.name = t.name
        spec.header_union_stack.size = t.size


def _named_members(container: Any, members: Iterable[tuple[str, V]]) -> Iterator[tuple[Any, V]]:
    """Add a member named after each pair to ``container.members``; yield it with its value."""
    for member_name, value in members:
        member = container.members.add()
        member.name = member_name
        yield member, value


def _set_type_info(info: p4t.P4TypeInfo, t: info_model.TypeInfo) -> None:  # noqa: C901 - one case per kind of P4Info object or type
    for name, s in t.structs:
        for member, member_type in _named_members(info.structs[name], s.members):
            _data_type(member.type_spec, member_type)
    for name, h in t.headers:
        for member, bits_type in _named_members(info.headers[name], h.members):
            _bitstring(member.type_spec, bits_type)
    for name, u in t.header_unions:
        for member, header_name in _named_members(info.header_unions[name], u.members):
            member.header.name = header_name
    for name, members in t.enums:
        enum = info.enums[name]
        for member_name in members:
            enum.members.add().name = member_name
    if t.errors is not None:
        info.error.SetInParent()
        info.error.members.extend(t.errors)
    for name, se in t.serializable_enums:
        ser = info.serializable_enums[name]
        ser.underlying_type.bitwidth = se.width
        for member, value in _named_members(ser, se.members):
            member.value = _bytes_of(value, se.width)
    for name, nt in t.new_types:
        new_type = info.new_types[name]
        new_type.SetInParent()
        if nt.translation is not None:
            new_type.translated_type.uri = nt.translation.uri
            if nt.translation.sdn_bitwidth is None:
                new_type.translated_type.sdn_string.SetInParent()
            else:
                new_type.translated_type.sdn_bitwidth = nt.translation.sdn_bitwidth
        elif nt.original is not None:
            _data_type(new_type.original_type, nt.original)
        _annotate(new_type, nt.annotations, skip=lambda name: name == "p4runtime_translation")
