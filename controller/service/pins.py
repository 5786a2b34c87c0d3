"""The pins on the leaves: their metadata, and the book of what each leaf holds.

A pin is a ``kv_pin`` entry on a transfer's source leaf, or a ``flow_pin`` entry of a
flow pin (:mod:`flow_pins`). Its P4Runtime ``metadata``
(an opaque cookie the switch stores and returns on reads) carries, as compact JSON,
what another controller needs to adopt it: the transfer's API id and trace id, its
hosts and size, when it was requested and when it times out (wall-clock seconds),
and the spine. So a restarted controller, or a backup that takes over, reads the
pins back and keeps serving the transfers in flight: their pins stay, their
completions are accepted, their timeouts are honoured. A flow pin's metadata has
``kind`` ``"flow"``, its pin id, hosts, the spine it holds and the spine it was asked
for (``req``), no size and no deadline (0): it lasts until it is deleted.

:class:`PinBook` is the shell's record of the pins it believes each leaf holds,
keyed like the table (leaf, source address, destination address, source port).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from ipaddress import IPv4Address
from typing import Any

META_VERSION = 1


@dataclass(frozen=True, slots=True)
class PinMeta:
    """What a pin entry's metadata says about its transfer."""

    id: str
    trace_id: str
    src: str
    dst: str
    size: int
    requested_wall: float
    deadline_wall: float
    spine: str
    kind: str = "transfer"
    requested: str = ""

    def encode(self) -> bytes:
        """The compact JSON stored in the entry."""
        doc = {
            "v": META_VERSION,
            "id": self.id,
            "trace": self.trace_id,
            "src": self.src,
            "dst": self.dst,
            "bytes": self.size,
            "t0": round(self.requested_wall, 3),
            "dl": round(self.deadline_wall, 3),
            "spine": self.spine,
            "kind": self.kind,
        }
        if self.requested:
            doc["req"] = self.requested
        return json.dumps(doc, separators=(",", ":")).encode()

    @staticmethod
    def decode(data: bytes) -> PinMeta | None:
        """The metadata of an entry, or None when it is not a kvfabric pin's."""
        try:
            doc: Any = json.loads(data.decode())
        except (UnicodeDecodeError, json.JSONDecodeError):
            return None
        if not isinstance(doc, dict) or doc.get("v") != META_VERSION:
            return None
        try:
            return PinMeta(
                id=str(doc["id"]),
                trace_id=str(doc["trace"]),
                src=str(doc["src"]),
                dst=str(doc["dst"]),
                size=int(doc["bytes"]),
                requested_wall=float(doc["t0"]),
                deadline_wall=float(doc["dl"]),
                spine=str(doc["spine"]),
                kind=str(doc.get("kind", "transfer")),
                requested=str(doc.get("req", "")),
            )
        except (KeyError, TypeError, ValueError):
            return None


@dataclass(frozen=True, slots=True)
class PinKey:
    """Where a pin lives and what it matches."""

    leaf: str
    src: IPv4Address
    dst: IPv4Address
    src_port: int

    def __str__(self) -> str:
        return f"{self.leaf}:{self.src}>{self.dst}:{self.src_port}"


@dataclass(frozen=True, slots=True)
class Pin:
    """A pin: its key, the uplink it sends to, and its metadata."""

    key: PinKey
    egress_port: int
    meta: PinMeta


class PinBook:
    """The pins the controller believes are on the leaves, by key and by transfer id."""

    def __init__(self) -> None:
        self.by_key: dict[PinKey, Pin] = {}
        self.by_id: dict[str, Pin] = {}

    def __len__(self) -> int:
        return len(self.by_key)

    def put(self, pin: Pin) -> None:
        """Record a pin written (or found) on its leaf."""
        old = self.by_key.get(pin.key)
        if old is not None and self.by_id.get(old.meta.id) is old:
            del self.by_id[old.meta.id]
        self.by_key[pin.key] = pin
        self.by_id[pin.meta.id] = pin

    def drop(self, key: PinKey) -> Pin | None:
        """Forget the pin at ``key``; returns it."""
        pin = self.by_key.pop(key, None)
        if pin is not None and self.by_id.get(pin.meta.id) is pin:
            del self.by_id[pin.meta.id]
        return pin

    def on_leaf(self, leaf: str) -> list[Pin]:
        """The pins of one leaf."""
        return [p for k, p in self.by_key.items() if k.leaf == leaf]
