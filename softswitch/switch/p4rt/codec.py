"""P4Runtime values and ids: bytestrings, and the P4Info index.

Bytestrings (P4Runtime spec, "Bytestrings"): a server accepts the canonical
form (no leading zero bytes; zero is one ``\\x00`` byte) and zero-padded forms,
and replies canonically.  An empty bytestring is INVALID_ARGUMENT; a value that
does not fit the field's width is OUT_OF_RANGE.

:class:`Schema` indexes one P4Info by id.  Every lookup of an id the P4Info
does not declare raises ``RuntimeConfigError("INVALID_ARGUMENT", ...)``, the
code BMv2/PI answers with.  Control-plane names of the P4Info are the keys of
:class:`softswitch.runtime.RuntimeState`, so id -> name is all the translation
the server needs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from finsy.proto import p4i, p4t

from softswitch.errors import RuntimeConfigError


def decode_bits(data: bytes, width: int, what: str) -> int:
    """The unsigned value of a bytestring for a ``bit<width>`` field."""
    if not data:
        raise RuntimeConfigError("INVALID_ARGUMENT", f"{what}: empty bytestring")
    value = int.from_bytes(data, "big")
    if width > 0 and value >> width:
        shown = data.hex() if len(data) <= 16 else f"{data[:8].hex()}... ({len(data)} bytes)"
        raise RuntimeConfigError(
            "OUT_OF_RANGE", f"{what}: value {shown} does not fit in {width} bits"
        )
    return value


def encode_bits(value: int) -> bytes:
    """The canonical bytestring of a non-negative value."""
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def encode_padded(value: int, width: int) -> bytes:
    """The bytestring of ``value`` padded to ``ceil(width / 8)`` bytes."""
    return value.to_bytes(max(1, (width + 7) // 8), "big")


class _HasPreamble(Protocol):
    @property
    def preamble(self) -> p4i.Preamble: ...


E = TypeVar("E", bound=_HasPreamble)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class _Kind(Generic[T]):
    """All P4Info objects of one kind, by id and by name."""

    label: str
    by_id: dict[int, T] = field(default_factory=dict)
    by_name: dict[str, T] = field(default_factory=dict)

    def get(self, ident: int) -> T:
        try:
            return self.by_id[ident]
        except KeyError:
            raise RuntimeConfigError(
                "INVALID_ARGUMENT", f"Invalid P4 id: no {self.label} has id {ident:#x}"
            ) from None


def _index(label: str, items: Iterable[E]) -> _Kind[E]:
    kind: _Kind[E] = _Kind(label)
    for item in items:
        kind.by_id[item.preamble.id] = item
        kind.by_name[item.preamble.name] = item
    return kind


def _member(members: dict[int, T], ident: int, owner: str, what: str) -> T:
    """``members[ident]``; INVALID_ARGUMENT saying that ``owner`` has no such ``what``."""
    try:
        return members[ident]
    except KeyError:
        raise RuntimeConfigError(
            "INVALID_ARGUMENT", f"Invalid P4 id: {owner} has no {what} {ident}"
        ) from None


class Schema:
    """One P4Info, indexed for the server."""

    def __init__(self, p4info: p4i.P4Info) -> None:
        self.p4info = p4info
        self.tables = _index("table", p4info.tables)
        self.actions = _index("action", p4info.actions)
        self.action_profiles = _index("action profile", p4info.action_profiles)
        self.counters = _index("counter", p4info.counters)
        self.direct_counters = _index("direct counter", p4info.direct_counters)
        self.meters = _index("meter", p4info.meters)
        self.direct_meters = _index("direct meter", p4info.direct_meters)
        self.registers = _index("register", p4info.registers)
        self.digests = _index("digest", p4info.digests)
        self.value_sets = _index("value set", p4info.value_sets)
        self.controller_metadata = {
            cpm.preamble.name: cpm for cpm in p4info.controller_packet_metadata
        }
        self._match_fields = {
            t.preamble.id: {mf.id: mf for mf in t.match_fields} for t in p4info.tables
        }
        self._params = {a.preamble.id: {p.id: p for p in a.params} for a in p4info.actions}
        self._direct: dict[tuple[int, str], int] = {}
        for dc in p4info.direct_counters:
            self._direct[(dc.direct_table_id, "counter")] = dc.preamble.id
        for dm in p4info.direct_meters:
            self._direct[(dm.direct_table_id, "meter")] = dm.preamble.id

    # --- tables and actions -------------------------------------------------------------

    def match_field(self, table: p4i.Table, field_id: int) -> p4i.MatchField:
        fields = self._match_fields.get(table.preamble.id, {})
        return _member(fields, field_id, f"table {table.preamble.name}", "match field")

    def param(self, action: p4i.Action, param_id: int) -> p4i.Action.Param:
        params = self._params.get(action.preamble.id, {})
        return _member(params, param_id, f"action {action.preamble.name}", "parameter")

    def direct_counter_of(self, table: p4i.Table) -> p4i.DirectCounter | None:
        ident = self._direct.get((table.preamble.id, "counter"))
        return None if ident is None else self.direct_counters.by_id[ident]

    def direct_meter_of(self, table: p4i.Table) -> p4i.DirectMeter | None:
        ident = self._direct.get((table.preamble.id, "meter"))
        return None if ident is None else self.direct_meters.by_id[ident]

    def action_ref(self, table: p4i.Table, action_id: int) -> p4i.ActionRef | None:
        for ref in table.action_refs:
            if ref.id == action_id:
                return ref
        return None

    def profile_of(self, table: p4i.Table) -> p4i.ActionProfile | None:
        if not table.implementation_id:
            return None
        return self.action_profiles.by_id.get(table.implementation_id)

    # --- types --------------------------------------------------------------------------

    def flat_widths(self, spec: p4t.P4DataTypeSpec) -> list[int]:
        """Bit widths of the leaves of a P4Data type, in declaration order."""
        which = spec.WhichOneof("type_spec")
        if which == "bitstring":
            bs = spec.bitstring
            inner = bs.WhichOneof("type_spec")
            if inner == "bit":
                return [bs.bit.bitwidth]
            if inner == "int":
                return [bs.int.bitwidth]
            return [bs.varbit.max_bitwidth]
        if which == "bool":
            return [1]
        if which == "struct":
            members = self.p4info.type_info.structs[spec.struct.name].members
            return [w for m in members for w in self.flat_widths(m.type_spec)]
        if which == "tuple":
            return [w for m in spec.tuple.members for w in self.flat_widths(m)]
        if which == "new_type":
            nt = self.p4info.type_info.new_types[spec.new_type.name]
            if nt.WhichOneof("representation") == "translated_type":
                return [nt.translated_type.sdn_bitwidth]
            return self.flat_widths(nt.original_type)
        if which == "serializable_enum":
            return [
                self.p4info.type_info.serializable_enums[
                    spec.serializable_enum.name
                ].underlying_type.bitwidth
            ]
        raise RuntimeConfigError("UNIMPLEMENTED", f"P4Data of kind {which} is not supported")

    def register_width(self, register: p4i.Register) -> int:
        widths = self.flat_widths(register.type_spec)
        return widths[0] if len(widths) == 1 else sum(widths)
