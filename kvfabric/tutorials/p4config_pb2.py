"""PI's ``p4.tmp.P4DeviceConfig`` message, for the tutorials' venv (``p4.tmp.p4config_pb2``).

p4lang tutorials' ``p4runtime_lib`` imports ``p4.tmp.p4config_pb2``, which PI's
build installs and no PyPI package ships.  ``make tutorials`` copies this file
into ``.venv-tutorials`` as ``p4/tmp/p4config_pb2.py``.  It declares PI's
schema (``p4/tmp/p4config.proto``: ``reassign = 1``, ``extras = 2`` with a
``map<string, string> kv = 1``, ``device_data = 3``) as a descriptor built
here, and builds the classes the way protoc's generated code does, with
protobuf's ``builder`` (protobuf 3.20 and later).
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.internal import builder


def _file() -> descriptor_pb2.FileDescriptorProto:
    fdp = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(
        name="p4/tmp/p4config.proto", package="p4.tmp", syntax="proto3"
    )
    message = file.message_type.add(name="P4DeviceConfig")
    extras = message.nested_type.add(name="Extras")
    entry = extras.nested_type.add(name="KvEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=fdp.TYPE_STRING, label=fdp.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=fdp.TYPE_STRING, label=fdp.LABEL_OPTIONAL)
    extras.field.add(
        name="kv",
        number=1,
        type=fdp.TYPE_MESSAGE,
        label=fdp.LABEL_REPEATED,
        type_name=".p4.tmp.P4DeviceConfig.Extras.KvEntry",
        json_name="kv",
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
    return file


_names: dict[str, Any] = {}
DESCRIPTOR = descriptor_pool.Default().AddSerializedFile(_file().SerializeToString())
builder.BuildMessageAndEnumDescriptors(DESCRIPTOR, _names)
builder.BuildTopDescriptorsAndMessages(DESCRIPTOR, "p4.tmp.p4config_pb2", _names)
P4DeviceConfig: Any = _names["P4DeviceConfig"]
