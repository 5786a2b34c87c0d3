"""The target's runtime data structures, with no knowledge of P4 syntax.

The interpreter's compiled closures call these on every packet; the STF runner
and the P4Runtime server configure them.  Values are Python ints holding the
unsigned bit pattern of a field of known width::

    actions.py   ActionSpec, ActionCall, scopes and the checks of an action call
    matches.py   match values (Exact, Lpm, ...), KeySpec, P4Runtime's rules for them
    matchers.py  how a table finds the winning entry (dict, LPM levels, tuple space)
    tables.py    table specs and entries, Table (lookup and CRUD)
    profiles.py  ActionProfile and ActionSelector (members, groups, choice)
    externs.py   Counter, DirectCounter, Meter, DirectMeter (trTCM), Register
    hashing.py   v1model HashAlgorithm implementations and hash() semantics
    pre.py       packet replication engine: multicast groups, clone sessions
    tm.py        traffic manager: per-port queue depth and rate
    valuesets.py parser value sets
    state.py     RuntimeState: all of the above by control-plane name
"""

from softswitch.runtime.actions import NO_ACTION, ActionCall, ActionScope, ActionSpec
from softswitch.runtime.externs import (
    Color,
    Counter,
    CounterData,
    CounterUnit,
    DirectCounter,
    DirectMeter,
    HasCells,
    Meter,
    MeterCell,
    MeterConfig,
    MeterType,
    Register,
)
from softswitch.runtime.hashing import (
    Crc,
    CrcParams,
    Hasher,
    compute,
    hash_fields,
    hash_offset,
    make_hasher,
    pack_fields,
    v1model_hash,
)
from softswitch.runtime.pre import CloneSession, Pre, Replica
from softswitch.runtime.profiles import ActionProfile, ActionSelector, Group, Member
from softswitch.runtime.state import RuntimeState, resolve
from softswitch.runtime.tables import (
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
    initial_entry_priorities,
)
from softswitch.runtime.tm import QueueTicket, TrafficManager
from softswitch.runtime.valuesets import ValueSet

__all__ = [
    "NO_ACTION",
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
    "Crc",
    "CrcParams",
    "DirectCounter",
    "DirectMeter",
    "Exact",
    "Group",
    "HasCells",
    "Hasher",
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
    "ValueSet",
    "compute",
    "hash_fields",
    "hash_offset",
    "initial_entry_priorities",
    "make_hasher",
    "pack_fields",
    "resolve",
    "v1model_hash",
]
