"""What another controller needs to adopt a pin: its metadata, and where it lives.

A transfer's pin is its tag port's spine range on its source leaf (nothing is written
for it), and its record sits in that range entry's ledger (:mod:`ledger`); a flow
pin's is its ``flow_pin`` entry (:mod:`flow_pins`), whose P4Runtime ``metadata`` (an
opaque cookie the switch stores and returns on reads) carries :class:`PinMeta` as
compact JSON. Either way the record says what another controller needs to keep
serving it: the API id (:func:`api_id`) and trace id, the hosts and size, when it was
requested and when it times out (wall-clock seconds), and the spine. A flow pin's metadata has
``kind`` ``"flow"``, its pin id, hosts, the spine it holds and the spine it was asked
for (``req``), no size and no deadline (0): it lasts until it is deleted.

:class:`PinKey` names a transfer by (source leaf, source address, destination address,
source port), the flow's identity.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from ipaddress import IPv4Address
from typing import Any

META_VERSION = 1


def api_id(instance: str, transfer_id: int) -> str:
    """The API id of controller ``instance``'s engine transfer ``transfer_id``:
    ``<instance>-<transfer_id>``. An instance tag is random per process, so ids never
    collide across restarts or between a primary and its backup."""
    return f"{instance}-{transfer_id}"


def instance_of(transfer_id: str) -> str:
    """The instance tag of an API id: the controller that decided the transfer."""
    return transfer_id.rpartition("-")[0]


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
