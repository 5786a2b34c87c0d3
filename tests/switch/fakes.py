"""A dataplane built from a P4Info alone: the runtime state, no packet processing.

It lets the P4Runtime server be tested with real runtime tables, profiles and
externs independently of the interpreter (the interpreter builds the same
objects from the program).  ``process`` drops every packet.
"""

from __future__ import annotations

from pathlib import Path

from finsy.proto import p4i
from google.protobuf import text_format

from softswitch.interp.pipeline import Digest
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

PROGRAMS = Path(__file__).parent / "programs"
_KINDS: dict[int, rt.MatchKind] = {
    p4i.MatchField.EXACT: "exact",
    p4i.MatchField.LPM: "lpm",
    p4i.MatchField.TERNARY: "ternary",
    p4i.MatchField.RANGE: "range",
    p4i.MatchField.OPTIONAL: "optional",
}
_SCOPES: dict[int, rt.ActionScope] = {
    p4i.ActionRef.TABLE_AND_DEFAULT: rt.ActionScope.TABLE_AND_DEFAULT,
    p4i.ActionRef.TABLE_ONLY: rt.ActionScope.TABLE_ONLY,
    p4i.ActionRef.DEFAULT_ONLY: rt.ActionScope.DEFAULT_ONLY,
}


def load_p4info(name: str = "fabric_test") -> p4i.P4Info:
    info = p4i.P4Info()
    text_format.Parse((PROGRAMS / f"{name}.p4info.txtpb").read_text(), info)
    return info


def state_from_p4info(info: p4i.P4Info) -> RuntimeState:
    state = RuntimeState()
    actions = {a.preamble.id: a for a in info.actions}
    profiles = {p.preamble.id: p for p in info.action_profiles}
    for prof in info.action_profiles:
        specs = [
            _action_spec(actions[ref.id], ref.scope)
            for t in info.tables
            if t.preamble.id in prof.table_ids
            for ref in t.action_refs
        ]
        if prof.with_selector:
            state.action_profiles[prof.preamble.name] = ActionSelector(
                prof.preamble.name, prof.size, max_group_size=prof.max_group_size, actions=specs
            )
        else:
            state.action_profiles[prof.preamble.name] = ActionProfile(
                prof.preamble.name, prof.size, specs
            )
    direct_counters = {d.direct_table_id: d for d in info.direct_counters}
    direct_meters = {d.direct_table_id: d for d in info.direct_meters}
    for t in info.tables:
        default = rt.ActionCall("NoAction")
        if t.HasField("initial_default_action"):
            action = actions[t.initial_default_action.action_id]
            args = tuple(int.from_bytes(a.value, "big") for a in t.initial_default_action.arguments)
            default = rt.ActionCall(action.preamble.name, args)
        impl = profiles.get(t.implementation_id)
        dc = direct_counters.get(t.preamble.id)
        dm = direct_meters.get(t.preamble.id)
        spec = rt.TableSpec(
            name=t.preamble.name,
            keys=tuple(
                rt.KeySpec(mf.name, mf.bitwidth, _KINDS[mf.match_type]) for mf in t.match_fields
            ),
            actions=tuple(_action_spec(actions[ref.id], ref.scope) for ref in t.action_refs),
            default_action=default,
            size=t.size or 1024,
            default_is_const=bool(t.const_default_action_id),
            is_const=t.is_const_table,
            implementation=impl.preamble.name if impl else None,
            direct_counter=dc.preamble.name if dc else None,
            direct_meter=dm.preamble.name if dm else None,
            supports_idle_timeout=t.idle_timeout_behavior == p4i.Table.NOTIFY_CONTROL,
        )
        profile = state.action_profiles[impl.preamble.name] if impl else None
        state.tables[t.preamble.name] = rt.Table(spec, profile)
    for c in info.counters:
        state.counters[c.preamble.name] = Counter(c.preamble.name, c.size, CounterUnit.BYTES)
    for d in info.direct_counters:
        table = next(t.preamble.name for t in info.tables if t.preamble.id == d.direct_table_id)
        state.direct_counters[d.preamble.name] = DirectCounter(
            d.preamble.name, table, CounterUnit.PACKETS_AND_BYTES
        )
    for m in info.meters:
        state.meters[m.preamble.name] = Meter(m.preamble.name, m.size, MeterType.PACKETS)
    for dmeter in info.direct_meters:
        owner = next(
            t.preamble.name for t in info.tables if t.preamble.id == dmeter.direct_table_id
        )
        state.direct_meters[dmeter.preamble.name] = DirectMeter(
            dmeter.preamble.name, owner, MeterType.BYTES
        )
    for r in info.registers:
        width = r.type_spec.bitstring.bit.bitwidth
        state.registers[r.preamble.name] = Register(r.preamble.name, r.size, width)
    return state


def _action_spec(action: p4i.Action, scope: int) -> rt.ActionSpec:
    return rt.ActionSpec(
        action.preamble.name,
        tuple((p.name, p.bitwidth) for p in action.params),
        _SCOPES[scope],
    )


class P4InfoDataplane:
    """A Dataplane with the P4Info's runtime objects; it forwards nothing."""

    def __init__(self, info: p4i.P4Info) -> None:
        self.state = state_from_p4info(info)
        self.digests: list[Digest] = []
        self.processed: list[tuple[int, bytes]] = []

    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        self.processed.append((port, data))
        return []


def p4info_loader(info: p4i.P4Info, device_config: bytes) -> P4InfoDataplane:
    return P4InfoDataplane(info)


class PatchDataplane(P4InfoDataplane):
    """Forwards like the test program would: a two-port patch with CPU punting.

    Port 1 <-> port 2; frames of EtherType 0x9000 go to the CPU port with a
    ``packet_in`` header (ingress port, 9 bits + 7 pad); frames from the CPU port
    start with a ``packet_out`` header whose egress port is used.
    """

    def __init__(self, info: p4i.P4Info, cpu_port: int = 255) -> None:
        super().__init__(info)
        self.cpu_port = cpu_port

    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        self.processed.append((port, data))
        if port == self.cpu_port:
            if len(data) < 2:
                return []
            egress = int.from_bytes(data[:2], "big") >> 7
            return [(egress, data[2:])]
        if data[12:14] == b"\x90\x00":
            return [(self.cpu_port, (port << 7).to_bytes(2, "big") + data)]
        self.digests.append(Digest("learn_t", 0, (int.from_bytes(data[6:12], "big"), port)))
        return [({1: 2, 2: 1}.get(port, 511), data)]


def patch_loader(info: p4i.P4Info, device_config: bytes) -> PatchDataplane:
    return PatchDataplane(info)
