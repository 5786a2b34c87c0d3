"""PI's ``p4.tmp.P4DeviceConfig`` message, for the tutorials' venv (``p4.tmp.p4config_pb2``).

p4lang tutorials' ``p4runtime_lib`` imports ``p4.tmp.p4config_pb2``, which PI's
build installs and no PyPI package ships.  ``make tutorials`` copies this file
into ``.venv-tutorials`` as the module ``p4.tmp.p4config_pb2``.  It declares PI's
schema (``p4/tmp/p4config.proto``: ``reassign = 1``, ``extras = 2`` with a
``map<string, string> kv = 1``, ``device_data = 3``) as a descriptor built
here, and builds the classes the way protoc's generated code does, with
protobuf's ``builder`` (protobuf 3.20 and later).
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.internal import builder

_FDP = descriptor_pb2.FieldDescriptorProto


def _field(
    message: descriptor_pb2.DescriptorProto,
    name: str,
    number: int,
    kind: int,
    *,
    repeated: bool = False,
    **extra: str,
) -> None:
    """Add a proto3 field of ``kind``; ``extra`` sets ``type_name`` or ``json_name``."""
    label = _FDP.LABEL_REPEATED if repeated else _FDP.LABEL_OPTIONAL
    message.field.add(name=name, number=number, type=kind, label=label, **extra)


def _file() -> descriptor_pb2.FileDescriptorProto:
    file = descriptor_pb2.FileDescriptorProto(
        name="p4/tmp/p4config.proto", package="p4.tmp", syntax="proto3"
    )
    message = file.message_type.add(name="P4DeviceConfig")
    extras = message.nested_type.add(name="Extras")
    entry = extras.nested_type.add(name="KvEntry")
    entry.options.map_entry = True
    _field(entry, "key", 1, _FDP.TYPE_STRING)
    _field(entry, "value", 2, _FDP.TYPE_STRING)
    kv_entry = ".p4.tmp.P4DeviceConfig.Extras.KvEntry"
    _field(extras, "kv", 1, _FDP.TYPE_MESSAGE, repeated=True, type_name=kv_entry, json_name="kv")
    _field(message, "reassign", 1, _FDP.TYPE_BOOL)
    _field(message, "extras", 2, _FDP.TYPE_MESSAGE, type_name=".p4.tmp.P4DeviceConfig.Extras")
    _field(message, "device_data", 3, _FDP.TYPE_BYTES)
    return file


_names: dict[str, Any] = {}
DESCRIPTOR = descriptor_pool.Default().AddSerializedFile(_file().SerializeToString())
builder.BuildMessageAndEnumDescriptors(DESCRIPTOR, _names)
builder.BuildTopDescriptorsAndMessages(DESCRIPTOR, "p4.tmp.p4config_pb2", _names)
P4DeviceConfig: Any = _names["P4DeviceConfig"]
