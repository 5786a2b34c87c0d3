"""StreamChannel payloads: packet-in/out, digest lists with acks, idle timeouts.

Packet I/O goes through the CPU port, as on BMv2: a PacketOut becomes a frame
entering the pipeline on the CPU port with the ``@controller_header("packet_out")``
header (its fields, from the P4Info, packed MSB first in declaration order)
before the payload; a frame the pipeline sends to the CPU port starts with the
``@controller_header("packet_in")`` header, which becomes the PacketIn metadata.

:class:`DigestQueue` batches the digests of each configured digest into
DigestLists (at ``max_list_size`` entries or when the oldest has waited
``max_timeout_ns``) and suppresses data already sent until the list is acked
or ``ack_timeout_ns`` passes.  :func:`idle_notification` builds the
IdleTimeoutNotification of expired entries.  Time is passed in (``now_ns``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from finsy.proto import p4d, p4i, p4r, p4t

from softswitch.errors import RuntimeConfigError
from softswitch.switch.p4rt.codec import Schema, decode_bits, encode_bits


def _metadata(schema: Schema, name: str) -> list[p4i.ControllerPacketMetadata.Metadata]:
    cpm = schema.controller_metadata.get(name)
    return list(cpm.metadata) if cpm is not None else []


def _pack(fields: Sequence[tuple[int, int]]) -> bytes:
    """Fields ``(value, width)`` MSB first; the total width must be whole bytes."""
    total = sum(width for _, width in fields)
    acc = 0
    for value, width in fields:
        acc = (acc << width) | value
    return acc.to_bytes(total // 8, "big") if total else b""


def packet_out_frame(schema: Schema, msg: p4r.PacketOut) -> bytes:
    """The frame that enters the pipeline on the CPU port for a PacketOut."""
    fields = _metadata(schema, "packet_out")
    if not fields:
        return bytes(msg.payload)
    given: dict[int, int] = {}
    by_id = {f.id: f for f in fields}
    for md in msg.metadata:
        spec = by_id.get(md.metadata_id)
        if spec is None:
            raise RuntimeConfigError(
                "INVALID_ARGUMENT", f"packet_out has no metadata field {md.metadata_id}"
            )
        if md.metadata_id in given:
            raise RuntimeConfigError("INVALID_ARGUMENT", f"packet_out {spec.name} is repeated")
        given[md.metadata_id] = decode_bits(md.value, spec.bitwidth, f"packet_out.{spec.name}")
    total = sum(f.bitwidth for f in fields)
    if total % 8:
        raise RuntimeConfigError(
            "FAILED_PRECONDITION", f"the packet_out header is {total} bits, not whole bytes"
        )
    header = _pack([(given.get(f.id, 0), f.bitwidth) for f in fields])
    return header + bytes(msg.payload)


def packet_in_message(schema: Schema, frame: bytes) -> p4r.PacketIn:
    """The PacketIn for a frame the pipeline sent to the CPU port."""
    fields = _metadata(schema, "packet_in")
    total = sum(f.bitwidth for f in fields)
    nbytes = (total + 7) // 8
    if not fields or len(frame) < nbytes:
        return p4r.PacketIn(payload=frame)
    acc = int.from_bytes(frame[:nbytes], "big") >> (nbytes * 8 - total)
    msg = p4r.PacketIn(payload=frame[nbytes:])
    shift = total
    for f in fields:
        shift -= f.bitwidth
        value = (acc >> shift) & ((1 << f.bitwidth) - 1)
        msg.metadata.add(metadata_id=f.id, value=encode_bits(value))
    return msg


def idle_notification(
    entries: Sequence[p4r.TableEntry], timestamp_ns: int
) -> p4r.StreamMessageResponse:
    note = p4r.IdleTimeoutNotification(table_entry=entries, timestamp=timestamp_ns)
    return p4r.StreamMessageResponse(idle_timeout_notification=note)


# --- digests ------------------------------------------------------------------------------


@dataclass(slots=True)
class _Pending:
    config: p4r.DigestEntry.Config
    entries: list[tuple[int, ...]] = field(default_factory=list)
    first_ns: int = 0
    unacked: dict[int, tuple[int, set[tuple[int, ...]]]] = field(default_factory=dict)

    def suppressed(self) -> set[tuple[int, ...]]:
        out: set[tuple[int, ...]] = set()
        for _, data in self.unacked.values():
            out |= data
        return out


class DigestQueue:
    """Digest configs (from DigestEntry writes) and the lists waiting to be sent or acked."""

    def __init__(self) -> None:
        self._digests: dict[int, _Pending] = {}
        self._next_list_id = 1

    def configure(self, digest_id: int, config: p4r.DigestEntry.Config | None) -> None:
        if config is None:
            self._digests.pop(digest_id, None)
            return
        stored = p4r.DigestEntry.Config()
        stored.CopyFrom(config)
        pending = self._digests.get(digest_id)
        if pending is None:
            self._digests[digest_id] = _Pending(stored)
        else:
            pending.config = stored

    def config(self, digest_id: int) -> p4r.DigestEntry.Config | None:
        pending = self._digests.get(digest_id)
        return None if pending is None else pending.config

    def clear(self) -> None:
        self._digests.clear()

    def add(self, digest_id: int, values: tuple[int, ...], now_ns: int) -> None:
        """One ``digest()`` call of the pipeline; ignored unless the digest is configured."""
        pending = self._digests.get(digest_id)
        if pending is None:
            return
        if values in pending.suppressed() or values in pending.entries:
            return
        if not pending.entries:
            pending.first_ns = now_ns
        pending.entries.append(values)

    def ack(self, digest_id: int, list_id: int) -> bool:
        pending = self._digests.get(digest_id)
        return pending is not None and pending.unacked.pop(list_id, None) is not None

    def due(self, schema: Schema, now_ns: int) -> list[p4r.StreamMessageResponse]:
        """DigestLists ready to send at ``now_ns``; expire unacked lists past their timeout."""
        out = []
        for digest_id, pending in self._digests.items():
            config = pending.config
            for list_id, (sent_ns, _) in list(pending.unacked.items()):
                if config.ack_timeout_ns and now_ns - sent_ns >= config.ack_timeout_ns:
                    del pending.unacked[list_id]
            if not pending.entries:
                continue
            full = config.max_list_size > 0 and len(pending.entries) >= config.max_list_size
            late = now_ns - pending.first_ns >= config.max_timeout_ns
            if not (full or late):
                continue
            out.append(self._make_list(schema, digest_id, pending, now_ns))
        return out

    def _make_list(
        self, schema: Schema, digest_id: int, pending: _Pending, now_ns: int
    ) -> p4r.StreamMessageResponse:
        list_id = self._next_list_id
        self._next_list_id += 1
        size = pending.config.max_list_size or len(pending.entries)
        batch, pending.entries = pending.entries[:size], pending.entries[size:]
        pending.first_ns = now_ns
        pending.unacked[list_id] = (now_ns, set(batch))
        digest = schema.digests.get(digest_id)
        msg = p4r.DigestList(digest_id=digest_id, list_id=list_id, timestamp=now_ns)
        for values in batch:
            msg.data.append(_p4data(digest.type_spec, values))
        return p4r.StreamMessageResponse(digest=msg)


def _p4data(spec: p4t.P4DataTypeSpec, values: tuple[int, ...]) -> p4d.P4Data:
    """A digest entry: a bitstring for a ``bit<W>`` digest, else a struct of bitstrings."""
    if len(values) == 1 and spec.WhichOneof("type_spec") == "bitstring":
        return p4d.P4Data(bitstring=encode_bits(values[0]))
    data = p4d.P4Data()
    for value in values:
        data.struct.members.add(bitstring=encode_bits(value))
    return data
