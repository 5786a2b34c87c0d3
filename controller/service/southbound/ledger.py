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

The ledgers are recomputed on the controller's event loop, beside the API, whenever
transfers came or went since the last poll. Building and encoding every record each
time cost about 13 us a transfer (4 ms with 300 in flight on a 2-core machine), so a
:class:`Book` keeps them: each record's JSON row is built once, and only the range
entries whose rows changed are encoded again. The rows of a burst (256 new transfers
between two polls: about 4 ms) are built a slice at a time (:meth:`Book.changes`, then
:meth:`Book.file` per slice), with the requests that came meanwhile answered in between.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from controller.service.southbound.pins import PinMeta

META_VERSION = 1
KIND = "ledger"

K = TypeVar("K", bound=Hashable)

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


Placed = tuple[str, RangeKey, Record]
"""A record and where it is kept: its source leaf and the range entry there."""


def encode(records: Iterable[Record]) -> bytes:
    """The metadata of a range entry holding ``records`` (sorted: equal sets, equal bytes)."""
    return _document([_row(r) for r in records])


def _row(record: Record) -> tuple[str, str]:
    """A record's sort key (its id) and its JSON row."""
    return str(record.meta.id), json.dumps(record.row(), separators=(",", ":"))


def _document(rows: Iterable[tuple[str, str]]) -> bytes:
    """The metadata holding ``rows`` (``json.dumps`` of the whole document, compact)."""
    body = ",".join(row for _, row in sorted(rows))
    if not body:
        return b""
    return f'{{"v":{META_VERSION},"kind":"{KIND}","t":[{body}]}}'.encode()


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


class Book(Generic[K]):
    """Every leaf's ledger, kept encoded from one call of :meth:`sync` to the next.

    Records are filed under a key of the caller's (a transfer's id) with a version
    (what of the record can change, compared with ``is`` first, then ``==``): a key
    seen before at the same version is not built again, and only the range entries
    whose records came, went or changed are encoded again.
    """

    def __init__(self) -> None:
        self._filed: dict[K, tuple[object, tuple[str, RangeKey] | None]] = {}
        """Key -> (version, where its record is filed; None: it is in no ledger)."""
        self._rows: dict[tuple[str, RangeKey], dict[K, tuple[str, str]]] = {}
        self._ledgers: dict[str, dict[RangeKey, bytes]] = {}
        self._dirty: set[tuple[str, RangeKey]] = set()
        """The range entries whose records changed since :meth:`ledgers` last ran."""

    def sync(
        self, versions: Mapping[K, object], build: Callable[[K], Placed | None]
    ) -> dict[str, dict[RangeKey, bytes]]:
        """Every leaf's ledger (as :func:`ledgers` gives it) for the records ``versions``
        names; ``build(key)`` makes the record of a key that is new or whose version
        changed (None: it belongs in no ledger)."""
        self.file(self.changes(versions), build)
        return self.ledgers()

    def changes(self, versions: Mapping[K, object]) -> list[tuple[K, object]]:
        """:meth:`sync` in steps, first: drop the records of the keys gone from
        ``versions``, and return the keys new or changed, with their versions, for
        :meth:`file` (a slice at a time, the caller answering requests between)."""
        for key in self._filed.keys() - versions.keys():
            self._unfile(key, self._dirty)
        out: list[tuple[K, object]] = []
        for key, version in versions.items():
            filed = self._filed.get(key)
            if filed is None or (filed[0] is not version and filed[0] != version):
                out.append((key, version))
        return out

    def file(
        self, changes: Iterable[tuple[K, object]], build: Callable[[K], Placed | None]
    ) -> None:
        """Build and file the records of ``changes`` (keys with their versions)."""
        dirty = self._dirty
        for key, version in changes:
            self._unfile(key, dirty)
            placed = build(key)
            spot = None
            if placed is not None:
                leaf, entry, record = placed
                spot = (leaf, entry)
                self._rows.setdefault(spot, {})[key] = _row(record)
                dirty.add(spot)
            self._filed[key] = (version, spot)

    def ledgers(self) -> dict[str, dict[RangeKey, bytes]]:
        """:meth:`sync` in steps, last: every leaf's ledger, with the range entries whose
        records changed since the last call encoded again."""
        for leaf, entry in self._dirty:
            rows = self._rows.get((leaf, entry))
            held = self._ledgers.setdefault(leaf, {})
            if rows:
                held[entry] = _document(rows.values())
            else:
                held.pop(entry, None)
                self._rows.pop((leaf, entry), None)
        self._dirty.clear()
        return {leaf: dict(held) for leaf, held in self._ledgers.items() if held}

    def _unfile(self, key: K, dirty: set[tuple[str, RangeKey]]) -> None:
        filed = self._filed.pop(key, None)
        if filed is not None and filed[1] is not None:
            del self._rows[filed[1]][key]
            dirty.add(filed[1])
