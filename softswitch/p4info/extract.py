"""ir.Program -> model.Model: the control-plane objects of a program, in p4c's order.

p4c builds P4Info after its front-end, by visiting the *evaluated blocks*
breadth first from the top-level block: the extern instances declared at top
level, the six V1Switch blocks, then what each of those declares (tables and
extern instances) in declaration order. Nested parser and control instances are
no longer blocks of their own by then: the front-end has inlined them into the
V1Switch block that declares them (see :mod:`~softswitch.p4info.layout`). A
control contributes its actions when it is visited (its copies of top-level
actions, such as ``NoAction``, first), a table its table entry together with its
direct counter or meter, an extern instance its counter, meter, register or
action profile entry. Digests come from the ``digest<T>()`` calls in the actions
and apply blocks of the controls, one per type ``T``. Controller headers are the
header types annotated ``@controller_header``, in declaration order.

Widths follow p4c's ``getTypeWidth``: a ``type`` with
``@p4runtime_translation(uri, W)`` counts ``W`` bits (0 for ``string``); other
types their bit width. Every type that an entry mentions is described in
``type_info`` as p4c's ``TypeSpecConverter`` does (structs, headers with their
fields flattened, unions, enums, serializable enums, ``type``\\ s, ``error``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TypedDict, TypeVar

from softswitch.errors import Loc, P4SourceError
from softswitch.frontend import ir, types
from softswitch.p4info import layout, model

_COUNTERS = {"counter", "direct_counter"}
_METERS = {"meter", "direct_meter"}
_PROFILES = {"action_profile", "action_selector"}

_Array = TypeVar("_Array", model.Counter, model.Meter)
_Direct = TypeVar("_Direct", model.DirectCounter, model.DirectMeter)


def extract_model(program: ir.Program) -> model.Model:
    """The control-plane model of ``program`` (raises P4SourceError on what P4Info rejects)."""
    return _Extractor(program).run()


# ---------------------------------------------------------------------------
# annotations


def annotations_of(anns: Sequence[ir.Annotation]) -> model.Annotations:
    """IR annotations as P4Info shows them: ``@name(body)`` with p4c's token spacing."""
    items = tuple(
        model.Annotation(a.name, f"@{a.name}({a.body})" if a.body else f"@{a.name}") for a in anns
    )
    brief = _string_arg(anns, "brief")
    description = _string_arg(anns, "description")
    doc = None
    if brief is not None or description is not None:
        doc = model.Documentation(brief, description)
    return model.Annotations(items, (), doc)


def _find(anns: Sequence[ir.Annotation], name: str) -> ir.Annotation | None:
    return ir.find_annotation(list(anns), name)


def _string_arg(anns: Sequence[ir.Annotation], name: str) -> str | None:
    ann = _find(anns, name)
    if ann is None:
        return None
    if ann.args and isinstance(ann.args[0], str):
        return ann.args[0]
    body = ann.body.strip()
    if len(body) >= 2 and body[0] == body[-1] == '"':
        return body[1:-1]
    return body


def _int_arg(anns: Sequence[ir.Annotation], name: str, loc: Loc) -> int | None:
    ann = _find(anns, name)
    if ann is None:
        return None
    if ann.args and isinstance(ann.args[0], int) and not isinstance(ann.args[0], bool):
        return ann.args[0]
    try:
        return int(ann.body.strip(), 0)
    except ValueError:
        raise P4SourceError(loc, f"@{name} should be an integer") from None


def _explicit_id(anns: Sequence[ir.Annotation], loc: Loc) -> int | None:
    return _int_arg(anns, "id", loc)


class _Annotated(TypedDict):
    explicit_id: int | None
    annotations: model.Annotations


def _annotated(anns: Sequence[ir.Annotation], loc: Loc) -> _Annotated:
    """A declaration's ``@id`` and annotations, as :class:`model.Annotated`'s fields."""
    return {"explicit_id": _explicit_id(anns, loc), "annotations": annotations_of(anns)}


def _hidden(anns: Sequence[ir.Annotation]) -> bool:
    return _find(anns, "hidden") is not None


def _type_cp_name(t: Any) -> str:
    """The control-plane name of a named type: its ``@name``, else its name."""
    anns = getattr(t, "annotations", None) or []
    name = _string_arg(anns, "name")
    if name:
        return name.removeprefix(".")
    return str(t.name)


# ---------------------------------------------------------------------------
# the extractor


class _Extractor:
    def __init__(self, program: ir.Program) -> None:
        self.program = program
        self.tables: list[model.Table] = []
        self.actions: list[model.Action] = []
        self.action_names: set[str] = set()
        self.profiles: list[model.ActionProfile] = []
        self.profile_names: set[str] = set()
        self.counters: list[model.Counter] = []
        self.direct_counters: list[model.DirectCounter] = []
        self.meters: list[model.Meter] = []
        self.direct_meters: list[model.DirectMeter] = []
        self.registers: list[model.Register] = []
        self.digests: list[model.Digest] = []
        self.value_sets: list[model.ValueSet] = []
        self.declared_instances: set[int] = set()
        # instances constructed in a table property (``implementation =
        # action_profile(...)``): p4c's walk meets them as the table's, not
        # as declared instances
        self.in_place = {
            id(inst)
            for table in program.tables
            for inst in (table.implementation, table.direct_counter, table.direct_meter)
            if inst is not None and inst.local_name == table.local_name
        }
        # type_info, by control-plane name
        self.structs: dict[str, model.StructInfo] = {}
        self.headers: dict[str, model.HeaderInfo] = {}
        self.unions: dict[str, model.HeaderUnionInfo] = {}
        self.enums: dict[str, tuple[str, ...]] = {}
        self.ser_enums: dict[str, model.SerEnumInfo] = {}
        self.new_types: dict[str, model.NewTypeInfo] = {}
        self.errors_used = False
        # whether p4c would have called mutable_type_info() (see _type_info)
        self.type_info_touched = False

    # -- traversal ------------------------------------------------------

    def run(self) -> model.Model:
        blocks = list(self.program.pipeline.values())
        for block in self._all_blocks(blocks):
            self.declared_instances.update(id(e) for e in block.externs)
        # p4c's walk is breadth first from the top-level block: its own
        # instances (declared outside any parser or control), then the
        # package's blocks, then what each of those declares; nested instances
        # are inlined by then (see layout.py)
        for inst in self.program.externs:
            if id(inst) not in self.declared_instances:
                self._visit_extern(inst)
        for block in blocks:
            self._visit_block(block)
        for block in blocks:
            for local in layout.flat_locals(block):
                if isinstance(local, ir.Table):
                    self._visit_table(local)
                elif isinstance(local, ir.ExternInstance):
                    self._visit_extern(local)
        controller_headers = tuple(
            self._controller_header(h) for h in self.program.controller_headers
        )
        return model.Model(
            pkg_info=model.PkgInfo(),
            tables=tuple(self.tables),
            actions=tuple(self.actions),
            action_profiles=tuple(self.profiles),
            counters=tuple(self.counters),
            direct_counters=tuple(self.direct_counters),
            meters=tuple(self.meters),
            direct_meters=tuple(self.direct_meters),
            controller_headers=controller_headers,
            value_sets=tuple(self.value_sets),
            registers=tuple(self.registers),
            digests=tuple(self.digests),
            type_info=self._type_info(),
        )

    def _all_blocks(self, blocks: list[ir.BlockInstance]) -> Iterator[ir.BlockInstance]:
        for block in blocks:
            yield block
            yield from self._all_blocks(block.blocks)

    def _visit_block(self, block: ir.BlockInstance) -> None:
        if block.kind == "parser":
            for local in layout.flat_locals(block):
                if isinstance(local, ir.ValueSet):
                    self.value_sets.append(self._value_set(local))
            return
        actions = layout.control_actions(block)
        for action in actions:
            self._add_action(action)
        for action in actions:
            self._extern_functions(layout.calls(action.body))
        self._extern_functions(layout.body_calls(block))

    def _extern_functions(self, calls: Iterable[ir.Call]) -> None:
        """What p4c's addExternFunction does for each extern function called."""
        for call in calls:
            if call.kind == "extern_func":
                self.type_info_touched = True
                if call.target == "digest" and call.type_args:
                    self._digest(call)

    # -- actions --------------------------------------------------------

    def _add_action(self, action: ir.Action) -> None:
        if action.name in self.action_names:
            return
        self.action_names.add(action.name)
        params = []
        for var in action.cp_params:
            params.append(self._param(var, action))
        if params and not _hidden(action.annotations):
            self.type_info_touched = True
        anns = list(action.annotations)
        self.actions.append(
            model.Action(
                name=action.name,
                params=tuple(params),
                **_annotated(anns, action.loc),
                hidden=_hidden(action.annotations),
                loc=action.loc,
            )
        )

    def _param(self, var: ir.Var, action: ir.Action) -> model.Param:
        t = var.type
        base = _strip(t)
        if (
            isinstance(base, types.EnumT)
            and base.underlying is None
            and not isinstance(t, types.NewType)
        ):
            self._convert(t)
            return model.Param(_source_name(var), None, type_name=_type_cp_name(base))
        if not isinstance(base, types.Bits | types.Bool | types.EnumT):
            raise P4SourceError(
                var.loc,
                f"Action parameter {var.name} of {action.name} has a type which is not "
                "bit<>, int<>, bool, type or serializable enum",
            )
        self._convert(t)
        anns: list[ir.Annotation] = list(getattr(var, "annotations", []) or [])
        return model.Param(
            name=_source_name(var),
            bitwidth=self._width(t),
            **_annotated(anns, var.loc),
            type_name=t.name if isinstance(t, types.NewType) else None,
        )

    # -- tables ---------------------------------------------------------

    def _visit_table(self, table: ir.Table) -> None:
        if not _hidden(table.annotations):
            self.type_info_touched = True
        fields = []
        for key in table.keys:
            t = key.expr.type
            if key.match_kind != "selector":
                self._convert(t)
            fields.append(
                model.MatchField(
                    name=_key_name(key),
                    bitwidth=self._width(t) if key.match_kind != "selector" else key.width,
                    match_kind=key.match_kind,
                    **_annotated(key.annotations, key.expr.loc),
                    type_name=t.name if isinstance(t, types.NewType) else None,
                )
            )
        refs = tuple(
            model.ActionRef(ref.action.name, self._ref_annotations(ref)) for ref in table.actions
        )
        for ref in table.actions:
            self._add_action(ref.action)
        default = None
        if self._has_default(table):
            default = model.ActionCall(
                table.default_action.name,
                tuple(
                    (self._width(var.type), value)
                    for var, value in zip(
                        table.default_action.cp_params, table.default_args, strict=False
                    )
                ),
            )
        implementation = table.implementation.name if table.implementation else None
        direct_counter = table.direct_counter.name if table.direct_counter else None
        direct_meter = table.direct_meter.name if table.direct_meter else None
        self.tables.append(
            model.Table(
                name=table.name,
                match_fields=tuple(fields),
                action_refs=refs,
                size=table.size if table.size else 1024,
                default_action=default,
                default_action_const=table.default_const,
                is_const_table=bool(table.entries) and table.entries_const,
                has_initial_entries=bool(table.entries),
                implementation=implementation,
                direct_counter=direct_counter,
                direct_meter=direct_meter,
                idle_timeout=table.support_timeout,
                **_annotated(table.annotations, table.loc),
                hidden=_hidden(table.annotations),
                loc=table.loc,
            )
        )
        if table.implementation is not None and id(table.implementation) in self.in_place:
            self._add_profile(table.implementation)
        if table.direct_counter is not None:
            self.direct_counters.append(_direct(model.DirectCounter, table.direct_counter, table))
        if table.direct_meter is not None:
            self.direct_meters.append(_direct(model.DirectMeter, table.direct_meter, table))

    @staticmethod
    def _ref_annotations(ref: ir.TableActionRef) -> model.Annotations:
        anns = list(ref.annotations)
        names = {a.name for a in anns}
        if ref.scope and ref.scope not in names:
            anns.insert(0, ir.Annotation(ref.scope))
        return annotations_of(anns)

    @staticmethod
    def _has_default(table: ir.Table) -> bool:
        explicit = table.custom.get("has_default_action") if table.custom else None
        if isinstance(explicit, bool):
            return explicit
        return table.default_action is not None

    # -- externs --------------------------------------------------------

    def _visit_extern(self, inst: ir.ExternInstance) -> None:
        if id(inst) in self.in_place:  # the table's visit took care of it
            return
        self.type_info_touched = True
        kind = inst.type_name
        if kind == "counter":
            self.counters.append(self._array(model.Counter, inst))
        elif kind == "meter":
            self.meters.append(self._array(model.Meter, inst))
        elif kind == "register":
            data_type = inst.type_args[0] if inst.type_args else types.Bits(32)
            self.registers.append(
                model.Register(
                    inst.name,
                    self._convert(data_type),
                    _int(_arg(inst, 0)),
                    self._index_type_name(inst, 1),
                    **_annotated(inst.annotations, inst.loc),
                    loc=inst.loc,
                )
            )
        elif kind in _PROFILES:
            self._add_profile(inst)

    def _array(self, cls: type[_Array], inst: ir.ExternInstance) -> _Array:
        """A ``counter(size, unit)`` or ``meter(size, unit)`` instance."""
        return cls(
            inst.name,
            _unit(_arg(inst, 1)),
            _int(_arg(inst, 0)),
            self._index_type_name(inst, 0),
            **_annotated(inst.annotations, inst.loc),
            loc=inst.loc,
        )

    def _index_type_name(self, inst: ir.ExternInstance, index: int) -> str | None:
        if len(inst.type_args) > index:
            t = inst.type_args[index]
            self._convert(t)
            if isinstance(t, types.NewType):
                return t.name
        return None

    def _add_profile(self, inst: ir.ExternInstance) -> None:
        if inst.name in self.profile_names:
            return
        self.profile_names.add(inst.name)
        selector = inst.type_name == "action_selector"
        size = _int(_arg(inst, 1 if selector else 0))
        semantics = _string_arg(inst.annotations, "selector_size_semantics")
        self.profiles.append(
            model.ActionProfile(
                name=inst.name,
                size=size,
                with_selector=selector,
                max_group_size=_int_arg(inst.annotations, "max_group_size", inst.loc),
                selector_size_semantics=semantics.lower() if semantics else None,
                max_member_weight=_int_arg(inst.annotations, "max_member_weight", inst.loc),
                **_annotated(inst.annotations, inst.loc),
                loc=inst.loc,
            )
        )

    # -- digests, value sets, controller headers --------------------------

    def _digest(self, call: ir.Call) -> None:
        t = call.type_args[0]
        if not isinstance(_strip(t), types.StructLike):
            raise P4SourceError(
                call.loc, f"digest type {t} is not a struct or header; P4Info needs a name"
            )
        spec = self._convert(t)
        name = _type_cp_name(_strip(t))
        anns = getattr(_strip(t), "annotations", []) or []
        self.digests.append(model.Digest(name, spec, **_annotated(anns, call.loc), loc=call.loc))

    def _value_set(self, vs: ir.ValueSet) -> model.ValueSet:
        et = _strip(vs.element_type)
        matches: list[model.MatchField] = []
        if isinstance(et, types.Bits):
            matches.append(model.MatchField("", et.width, "exact"))
        elif isinstance(et, types.StructT):
            for fname, ftype in et.fields.items():
                fanns = et.field_annotations.get(fname, [])
                if not isinstance(_strip(ftype), types.Bits):
                    raise P4SourceError(
                        vs.loc,
                        "Unsupported type argument for Value Set; this version of P4Runtime "
                        "requires that when the type parameter of a Value Set is a struct, all "
                        f"the fields of the struct must be of type bit<W>, but {fname} is not",
                    )
                kind = _string_arg(fanns, "match") or "exact"
                matches.append(
                    model.MatchField(
                        fname,
                        types.bit_width(ftype),
                        kind,
                        **_annotated(fanns, vs.loc),
                    )
                )
        elif isinstance(et, types.EnumT) and et.underlying is not None:
            for member in et.members:
                matches.append(model.MatchField(member, et.underlying.width, "exact"))
        else:
            raise P4SourceError(
                vs.loc,
                "invalid type parameter for Value Set; it must be one of bit<W>, struct, "
                "tuple or serializable enum",
            )
        return model.ValueSet(
            vs.name,
            vs.size,
            tuple(matches),
            **_annotated(vs.annotations, vs.loc),
            loc=vs.loc,
        )

    def _controller_header(self, header: types.HeaderT) -> model.ControllerHeader:
        controller_name = _string_arg(header.annotations, "controller_header") or header.name
        metadata = []
        for fname, ftype, fanns in _flatten(header):
            if not (_hidden(header.annotations) or _hidden(fanns)):
                self._convert(ftype)
                self.type_info_touched = True
            metadata.append(
                model.PacketMetadata(
                    fname,
                    self._width(ftype),
                    ftype.name if isinstance(ftype, types.NewType) else None,
                    _hidden(fanns),
                    **_annotated(fanns, Loc(header.name, 0, 0)),
                )
            )
        return model.ControllerHeader(
            name=_type_cp_name(header),
            controller_name=controller_name,
            metadata=tuple(metadata),
            **_annotated(header.annotations, Loc(header.name, 0, 0)),
            hidden=_hidden(header.annotations),
        )

    # -- types ----------------------------------------------------------

    def _width(self, t: types.P4Type) -> int:
        if isinstance(t, types.NewType):
            translation = _translation(t)
            if translation is not None:
                return translation.sdn_bitwidth or 0
            return self._width(t.base)
        if isinstance(t, types.ErrorT):
            return 0
        return types.bit_width(t)

    def _convert(self, t: types.P4Type) -> model.DataType:  # noqa: C901 - one case per kind of P4Info object or type
        """``t`` as a P4DataTypeSpec, recording the named types it uses in type_info."""
        if isinstance(t, types.Bits):
            return model.BitsType(t.width, t.signed)
        if isinstance(t, types.Varbit):
            return model.VarbitType(t.max_width)
        if isinstance(t, types.Bool):
            return model.BoolType()
        if isinstance(t, types.ErrorT):
            self.errors_used = True
            return model.ErrorType()
        if isinstance(t, types.NewType):
            return self._convert_new_type(t)
        if isinstance(t, types.EnumT):
            name = _type_cp_name(t)
            if t.underlying is None:
                self.enums.setdefault(name, tuple(t.members))
                return model.NamedType("enum", name)
            self.ser_enums.setdefault(
                name, model.SerEnumInfo(t.underlying.width, tuple(t.members.items()))
            )
            return model.NamedType("serializable_enum", name)
        if isinstance(t, types.HeaderT):
            name = _type_cp_name(t)
            if name not in self.headers:
                members: list[tuple[str, model.BitsType | model.VarbitType]] = []
                for fname, ftype, _ in _flatten(t):
                    spec = self._convert(ftype)
                    if isinstance(spec, model.BitsType | model.VarbitType):
                        members.append((fname, spec))
                    else:
                        members.append((fname, model.BitsType(self._width(ftype))))
                self.headers[name] = model.HeaderInfo(tuple(members))
            return model.NamedType("header", name)
        if isinstance(t, types.UnionT):
            name = _type_cp_name(t)
            if name not in self.unions:
                self.unions[name] = model.HeaderUnionInfo(())
                umembers = []
                for fname, ftype in t.fields.items():
                    spec = self._convert(ftype)
                    assert isinstance(spec, model.NamedType)
                    umembers.append((fname, spec.name))
                self.unions[name] = model.HeaderUnionInfo(tuple(umembers))
            return model.NamedType("header_union", name)
        if isinstance(t, types.StructT):
            name = _type_cp_name(t)
            if name not in self.structs:
                self.structs[name] = model.StructInfo(())
                smembers = tuple((f, self._convert(ft)) for f, ft in t.fields.items())
                self.structs[name] = model.StructInfo(smembers)
            return model.NamedType("struct", name)
        if isinstance(t, types.StackT):
            element = self._convert(t.element)
            assert isinstance(element, model.NamedType)
            if element.kind == "header":
                return model.StackType("header", element.name, t.size)
            return model.StackType("header_union", element.name, t.size)
        if isinstance(t, types.TupleT):
            return model.TupleType(tuple(self._convert(e) for e in t.elements))
        raise P4SourceError(Loc("<type>", 0, 0), f"Unexpected type {t} in a P4Runtime entity")

    def _convert_new_type(self, t: types.NewType) -> model.DataType:
        name = t.name
        if name not in self.new_types:
            translation = _translation(t)
            underlying: types.P4Type = t
            while isinstance(underlying, types.NewType):
                underlying = underlying.base
            self.new_types[name] = model.NewTypeInfo(None)
            original = self._convert(underlying)
            anns = [a for a in t.annotations if a.name != "p4runtime_translation"]
            self.new_types[name] = model.NewTypeInfo(
                None if translation is not None else original,
                translation,
                annotations_of(anns),
            )
        return model.NamedType("new_type", name)

    def _type_info(self) -> model.TypeInfo | None:
        """What p4c's TypeSpecConverter wrote, or None if p4c never touched type_info.

        p4c calls ``P4Info::mutable_type_info()`` (which makes an empty
        ``type_info {}`` appear) for every table, every action parameter, every
        controller header field, every declared extern instance and every
        extern function called from a control; a program with none of these
        has no ``type_info`` at all.
        """
        if not self.type_info_touched:
            return None
        return model.TypeInfo(
            structs=tuple(self.structs.items()),
            headers=tuple(self.headers.items()),
            header_unions=tuple(self.unions.items()),
            enums=tuple(self.enums.items()),
            errors=tuple(self.program.errors) if self.errors_used else None,
            serializable_enums=tuple(self.ser_enums.items()),
            new_types=tuple(self.new_types.items()),
        )


# ---------------------------------------------------------------------------
# helpers


def _key_name(key: ir.TableKey) -> str:
    """A match field's name as p4c's TableKeyNames makes it.

    An ``@name`` wins; otherwise the key expression as written, except that a
    header's ``isValid()`` is called ``$valid$`` ("what P4Runtime expects").
    """
    if _find(key.annotations, "name") is not None:
        return key.name
    return re.sub(r"\.isValid\(\s*\)$", ".$valid$", key.name)


def _source_name(var: ir.Var) -> str:
    """A parameter's name as written (the IR renames variables ``v<n>_<name>``)."""
    return re.sub(r"^v\d+_", "", var.name)


def _strip(t: types.P4Type) -> types.P4Type:
    while isinstance(t, types.NewType):
        t = t.base
    return t


def _translation(t: types.NewType) -> model.Translation | None:
    ann = _find(t.annotations, "p4runtime_translation")
    if ann is None:
        return None
    uri = ann.args[0] if ann.args and isinstance(ann.args[0], str) else ""
    second = ann.args[1] if len(ann.args) > 1 else None
    if isinstance(second, int) and not isinstance(second, bool):
        return model.Translation(uri, second)
    parts = [p.strip() for p in ann.body.split(",")]
    if not uri and parts:
        uri = parts[0].strip('"')
    if len(parts) > 1 and parts[1] != "string":
        digits = "".join(ch for ch in parts[1] if ch.isdigit())
        if digits:
            return model.Translation(uri, int(digits))
    return model.Translation(uri, None)


def _flatten(
    t: types.StructLike, prefix: str = ""
) -> Iterator[tuple[str, types.P4Type, list[ir.Annotation]]]:
    """The fields of a header with nested structs flattened (p4c's FlattenHeader)."""
    for fname, ftype in t.fields.items():
        anns = list(t.field_annotations.get(fname, []))
        if isinstance(ftype, types.StructT):
            yield from _flatten(ftype, f"{prefix}{fname}.")
        else:
            yield f"{prefix}{fname}", ftype, anns


def _arg(inst: ir.ExternInstance, index: int) -> Any:
    return inst.args[index] if len(inst.args) > index else None


def _int(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, ir.Const) and isinstance(value.value, int):
        return value.value
    return 0


def _direct(cls: type[_Direct], extern: ir.ExternInstance, table: ir.Table) -> _Direct:
    """A ``direct_counter(unit)`` or ``direct_meter(unit)`` attached to ``table``."""
    unit = _unit(extern.args[0] if extern.args else "")
    return cls(
        extern.name, unit, table.name, **_annotated(extern.annotations, extern.loc), loc=extern.loc
    )


def _unit(value: Any) -> str:
    if isinstance(value, str):
        return value.rsplit(".", 1)[-1]
    return ""
