"""PI's ``p4.tmp.P4DeviceConfig`` wrapper of a BMv2 device config, decoded by hand.

PI, BMv2's ``simple_switch_grpc`` and the clients written for them (p4lang
tutorials' ``p4runtime_lib``, p4runtime-shell) send the BMv2 JSON inside this
message as ``ForwardingPipelineConfig.p4_device_config``::

    message P4DeviceConfig {
      bool reassign = 1;
      message Extras { map<string, string> kv = 1; }
      Extras extras = 2;
      bytes device_data = 3;
    }

``simple_switch_grpc`` also takes the bare JSON.  :func:`unwrap` accepts both:
bytes whose first non-blank byte is ``{`` are the bare document; anything else
must parse as the message above, and its ``device_data`` is the document.  The
decoder reads the protobuf wire format directly (three fields; unknown fields
are skipped as protobuf parsers do), so the switch does not depend on PI's
generated code.  Malformed input raises RuntimeConfigError(INVALID_ARGUMENT)
naming the byte offset.
"""

from __future__ import annotations

from dataclasses import dataclass

from softswitch.errors import RuntimeConfigError

_BLANK = b" \t\r\n"
_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


@dataclass(frozen=True, slots=True)
class P4DeviceConfig:
    """The decoded wrapper."""

    reassign: bool
    extras: bytes
    device_data: bytes


def _bad(offset: int, what: str) -> RuntimeConfigError:
    return RuntimeConfigError(
        "INVALID_ARGUMENT",
        f"p4_device_config is not a JSON document, nor a p4.tmp.P4DeviceConfig: "
        f"byte {offset}: {what}",
    )


def _varint(data: bytes, offset: int) -> tuple[int, int]:
    value = shift = 0
    start = offset
    while True:
        if offset >= len(data):
            raise _bad(start, "truncated varint")
        byte = data[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, offset
        shift += 7
        if shift >= 70:
            raise _bad(start, "varint longer than 10 bytes")


def decode(data: bytes) -> P4DeviceConfig:
    """Parse the wire form of a ``p4.tmp.P4DeviceConfig``."""
    reassign = False
    extras = b""
    device_data = b""
    offset = 0
    while offset < len(data):
        key_at = offset
        key, offset = _varint(data, offset)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise _bad(key_at, "field number 0")
        if wire == _VARINT:
            value, offset = _varint(data, offset)
            if number == 1:
                reassign = value != 0
        elif wire == _LEN:
            length, offset = _varint(data, offset)
            if offset + length > len(data):
                raise _bad(key_at, f"field {number} claims {length} bytes, past the end")
            chunk = data[offset : offset + length]
            offset += length
            if number == 2:
                extras += chunk  # repeated occurrences of a message field merge
            elif number == 3:
                device_data = chunk
        elif wire in (_I64, _I32):
            offset += 8 if wire == _I64 else 4
            if offset > len(data):
                raise _bad(key_at, f"field {number} is truncated")
        else:
            raise _bad(key_at, f"field {number} has wire type {wire}")
        if (number, wire) in ((1, _LEN), (2, _VARINT), (3, _VARINT)):
            raise _bad(key_at, f"field {number} has the wrong wire type {wire}")
    return P4DeviceConfig(reassign=reassign, extras=extras, device_data=device_data)


def is_bare_json(data: bytes) -> bool:
    """True if ``data`` is a bare JSON object rather than the wrapper."""
    return data.lstrip(_BLANK).startswith(b"{")


def unwrap(data: bytes) -> bytes:
    """The JSON document of ``data``: ``data`` itself if bare, else the wrapper's device_data."""
    if is_bare_json(data):
        return data
    inner = decode(data).device_data
    if not inner:
        raise RuntimeConfigError(
            "INVALID_ARGUMENT", "p4_device_config is a p4.tmp.P4DeviceConfig with no device_data"
        )
    return inner
