"""The target's runtime data structures, with no knowledge of P4 syntax.

The interpreter's compiled closures call these on every packet; the STF runner
and the P4Runtime server configure them.  Values are Python ints holding the
unsigned bit pattern of a field of known width.

    tables.py    match values, table specs and entries, Table (lookup and CRUD)
    profiles.py  ActionProfile and ActionSelector (members, groups, choice)
    externs.py   Counter, DirectCounter, Meter, DirectMeter (trTCM), Register
    hashing.py   v1model HashAlgorithm implementations and hash() semantics
    pre.py       packet replication engine: multicast groups, clone sessions
    tm.py        traffic manager: per-port queue depth and rate
    state.py     RuntimeState: all of the above by control-plane name
"""

from softswitch.runtime.externs import (
    Color,
    Counter,
    CounterData,
    CounterUnit,
    DirectCounter,
    DirectMeter,
    Meter,
    MeterCell,
    MeterConfig,
    MeterType,
    Register,
)
from softswitch.runtime.hashing import CrcParams, compute, hash_fields, pack_fields, v1model_hash
from softswitch.runtime.pre import CloneSession, Pre, Replica
from softswitch.runtime.profiles import ActionProfile, ActionSelector, Group, Member
from softswitch.runtime.state import RuntimeState
from softswitch.runtime.tables import (
    ActionCall,
    ActionScope,
    ActionSpec,
    Exact,
    KeySpec,
    LookupResult,
    Lpm,
    Match,
    MatchKind,
    Optional,
    Range,
    Table,
    TableEntry,
    TableSpec,
    Ternary,
)
from softswitch.runtime.tm import QueueTicket, TrafficManager

__all__ = [
    "ActionCall",
    "ActionProfile",
    "ActionScope",
    "ActionSelector",
    "ActionSpec",
    "CloneSession",
    "Color",
    "Counter",
    "CounterData",
    "CounterUnit",
    "CrcParams",
    "DirectCounter",
    "DirectMeter",
    "Exact",
    "Group",
    "KeySpec",
    "LookupResult",
    "Lpm",
    "Match",
    "MatchKind",
    "Member",
    "Meter",
    "MeterCell",
    "MeterConfig",
    "MeterType",
    "Optional",
    "Pre",
    "QueueTicket",
    "Range",
    "Register",
    "Replica",
    "RuntimeState",
    "Table",
    "TableEntry",
    "TableSpec",
    "Ternary",
    "TrafficManager",
    "compute",
    "hash_fields",
    "pack_fields",
    "v1model_hash",
]
