"""The ledger: the transfers in flight, kept on the leaves for a controller that takes over.

A decision writes nothing to a switch: a transfer's tag port is in the range of its
spine, and the leaf's static ``kv_range`` entry of that range pins it. What a restarted
controller, or a backup taking over, needs to keep serving the transfers in flight
(their API ids for the completions, their tag ports so that no new transfer of the
same host takes one, their bytes so that new transfers do not herd onto their spine)
is therefore written *beside* the decisions, not in them: in the P4Runtime
``metadata`` of the range entries (an opaque cookie the switch stores and returns on
reads; the data plane never sees it).

Every poll interval the service recomputes, for each leaf, the records of the
transfers in flight from it, grouped by range entry (destination group, spine range),
and modifies the entries whose records changed: one Write per leaf with a handful of
entries, whatever the number of transfers. A transfer decided less than one poll
interval before the controller died is not in any ledger yet: its successor does not
know it (its completion is refused as unknown and its tag port may be handed out again
while it runs). That window is the price of a decision that writes nothing.

The metadata is compact JSON: ``{"v": 1, "kind": "ledger", "t": [record, ...]}``, one
record per transfer, ``[id, trace id, src, dst, bytes, requested (wall s), deadline
(wall s), spine, tag port]``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from controller.service.pins import PinMeta

META_VERSION = 1
KIND = "ledger"

RangeKey = tuple[int, str]
"""A range entry of a leaf: (destination ECMP group, spine of the tag port range)."""


@dataclass(frozen=True, slots=True)
class Record:
    """One transfer in flight, as a ledger holds it."""

    meta: PinMeta
    port: int

    def row(self) -> list[object]:
        m = self.meta
        return [m.id, m.trace_id, m.src, m.dst, m.size, round(m.requested_wall, 3),
                round(m.deadline_wall, 3), m.spine, self.port]  # fmt: skip


def encode(records: Iterable[Record]) -> bytes:
    """The metadata of a range entry holding ``records`` (sorted: equal sets, equal bytes)."""
    rows = sorted((r.row() for r in records), key=lambda row: str(row[0]))
    if not rows:
        return b""
    doc = {"v": META_VERSION, "kind": KIND, "t": rows}
    return json.dumps(doc, separators=(",", ":")).encode()


def decode(data: bytes) -> list[Record] | None:
    """The records of a range entry's metadata; [] when it has none, None when the
    metadata is not a kvfabric ledger (then it is overwritten)."""
    if not data:
        return []
    try:
        doc: Any = json.loads(data.decode())
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(doc, dict) or doc.get("v") != META_VERSION or doc.get("kind") != KIND:
        return None
    out: list[Record] = []
    try:
        for row in doc["t"]:
            tid, trace, src, dst, size, t0, dl, spine, port = row
            meta = PinMeta(str(tid), str(trace), str(src), str(dst), int(size), float(t0),
                           float(dl), str(spine))  # fmt: skip
            out.append(Record(meta, int(port)))
    except (KeyError, TypeError, ValueError):
        return None
    return out


def ledgers(records: Iterable[tuple[RangeKey, Record]]) -> dict[RangeKey, bytes]:
    """The metadata of each range entry that has records."""
    grouped: dict[RangeKey, list[Record]] = {}
    for key, record in records:
        grouped.setdefault(key, []).append(record)
    return {key: encode(rs) for key, rs in grouped.items()}


def changed(old: Mapping[RangeKey, bytes], new: Mapping[RangeKey, bytes]) -> set[RangeKey]:
    """The range entries whose metadata differs between two ledgers of a leaf."""
    return {k for k in old.keys() | new.keys() if old.get(k, b"") != new.get(k, b"")}
