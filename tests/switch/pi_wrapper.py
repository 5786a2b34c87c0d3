"""PI's ``p4.tmp.P4DeviceConfig`` built with protobuf's own runtime, as PI's clients do.

The message class is the one the tutorials' venv gets (:mod:`kvfabric.tutorials.p4config_pb2`,
PI's schema as a protobuf descriptor), so the tests encode with protobuf's serializer,
independently of the switch's hand-written decoder.
"""

from __future__ import annotations

from kvfabric.tutorials.p4config_pb2 import P4DeviceConfig


def wrap(device_data: bytes, reassign: bool = True, **extras: str) -> bytes:
    """The serialized wrapper around ``device_data``."""
    message = P4DeviceConfig(reassign=reassign, device_data=device_data)
    for key, value in extras.items():
        message.extras.kv[key] = value
    return bytes(message.SerializeToString())
