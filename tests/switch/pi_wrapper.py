"""PI's ``p4.tmp.P4DeviceConfig`` built with protobuf's own runtime, as PI's clients do.

The message class is made at run time from a descriptor of PI's schema, so the
tests encode with protobuf's serializer, independently of the switch's decoder.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory


def _message_class() -> Any:
    file = descriptor_pb2.FileDescriptorProto(
        name="kvfabric_tests/p4config.proto", package="p4.tmp", syntax="proto3"
    )
    message = file.message_type.add(name="P4DeviceConfig")
    extras = message.nested_type.add(name="Extras")
    entry = extras.nested_type.add(name="KvEntry")
    entry.options.map_entry = True
    fdp = descriptor_pb2.FieldDescriptorProto
    entry.field.add(name="key", number=1, type=fdp.TYPE_STRING, label=fdp.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=fdp.TYPE_STRING, label=fdp.LABEL_OPTIONAL)
    extras.field.add(
        name="kv",
        number=1,
        type=fdp.TYPE_MESSAGE,
        label=fdp.LABEL_REPEATED,
        type_name=".p4.tmp.P4DeviceConfig.Extras.KvEntry",
    )
    message.field.add(name="reassign", number=1, type=fdp.TYPE_BOOL, label=fdp.LABEL_OPTIONAL)
    message.field.add(
        name="extras",
        number=2,
        type=fdp.TYPE_MESSAGE,
        label=fdp.LABEL_OPTIONAL,
        type_name=".p4.tmp.P4DeviceConfig.Extras",
    )
    message.field.add(name="device_data", number=3, type=fdp.TYPE_BYTES, label=fdp.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("p4.tmp.P4DeviceConfig"))


P4DeviceConfig = _message_class()


def wrap(device_data: bytes, reassign: bool = True, **extras: str) -> bytes:
    """The serialized wrapper around ``device_data``."""
    message = P4DeviceConfig(reassign=reassign, device_data=device_data)
    for key, value in extras.items():
        message.extras.kv[key] = value
    return bytes(message.SerializeToString())
