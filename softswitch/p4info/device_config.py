"""The softswitch's device config: what ``kvfabric compile -o`` writes and a switch loads.

P4Runtime's ``SetForwardingPipelineConfig`` carries a P4Info and an opaque,
target-specific ``p4_device_config``. BMv2's is its JSON; ours is the program
itself, since the softswitch compiles P4 when it loads a pipeline. The document
is one JSON object, UTF-8 encoded::

    {
      "format": "kvfabric-softswitch/1",
      "file": "path/of/the/program.p4",
      "program": "<the preprocessed P4 source, with # line markers>",
      "p4info_sha256": "<hex digest of the program's P4Info>"
    }

``program`` is self-contained (includes expanded, macros applied), so a switch
needs no include path. ``p4info_sha256`` fingerprints the P4Info the program
compiles to: the SHA-256 of its canonical protobuf text (fields in number order,
map entries sorted by key, no header), so that a switch can refuse a device
config paired with the P4Info of another program, whatever serialiser the
controller used. Unknown keys are rejected: the format is versioned instead.

:func:`decode` takes the document bare or wrapped in PI's ``p4.tmp.P4DeviceConfig``
(see :mod:`softswitch.p4info.pi_config`), as ``simple_switch_grpc`` takes its
BMv2 JSON.  A BMv2 JSON written by p4c is recognised and refused with a message
that says how to compile for this target.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from finsy.proto import p4i
from google.protobuf import text_format

from softswitch.errors import RuntimeConfigError
from softswitch.p4info import pi_config

FORMAT = "kvfabric-softswitch/1"

_KEYS = ("format", "file", "program", "p4info_sha256")
# Top-level keys every BMv2 JSON written by p4c carries.
_BMV2_KEYS = frozenset({"header_types", "headers", "parsers", "pipelines", "deparsers"})


@dataclass(frozen=True, slots=True)
class DeviceConfig:
    """A compiled program as the switch receives it."""

    program: str
    file: str
    p4info_sha256: str
    format: str = FORMAT


def p4info_sha256(info: p4i.P4Info) -> str:
    """The fingerprint of ``info``: SHA-256 of its canonical text form, in hex."""
    canonical = text_format.MessageToString(info, as_utf8=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def make_device_config(program: str, file: str, info: p4i.P4Info) -> DeviceConfig:
    """The device config of the preprocessed ``program`` read from ``file``."""
    return DeviceConfig(program=program, file=file, p4info_sha256=p4info_sha256(info))


def encode(config: DeviceConfig) -> bytes:
    """``config`` as the bytes of ``p4_device_config``."""
    document = {
        "format": config.format,
        "file": config.file,
        "program": config.program,
        "p4info_sha256": config.p4info_sha256,
    }
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def decode(data: bytes) -> DeviceConfig:
    """Parse ``p4_device_config`` bytes, bare or PI-wrapped; RuntimeConfigError if malformed."""
    data = pi_config.unwrap(data)
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RuntimeConfigError(
            "INVALID_ARGUMENT", f"p4_device_config is not a JSON document: {exc}"
        ) from exc
    if not isinstance(document, dict):
        raise RuntimeConfigError("INVALID_ARGUMENT", "p4_device_config is not a JSON object")
    if "format" not in document and set(document) >= _BMV2_KEYS:
        raise RuntimeConfigError(
            "INVALID_ARGUMENT",
            "p4_device_config is a BMv2 JSON written by p4c; this target loads the device "
            "config of `kvfabric compile -o` (or of the p4c shims of `kvfabric bmv2-shims`)",
        )
    unknown = sorted(set(document) - set(_KEYS))
    if unknown:
        raise RuntimeConfigError(
            "INVALID_ARGUMENT", f"p4_device_config has unknown keys: {', '.join(unknown)}"
        )
    if document.get("format") != FORMAT:
        raise RuntimeConfigError(
            "INVALID_ARGUMENT",
            f"p4_device_config format is {document.get('format')!r}, expected {FORMAT!r}",
        )
    values: dict[str, str] = {}
    for key in _KEYS:
        value = document.get(key)
        if not isinstance(value, str):
            raise RuntimeConfigError(
                "INVALID_ARGUMENT", f"p4_device_config key {key!r} must be a string"
            )
        values[key] = value
    return DeviceConfig(**values)


def check_matches(config: DeviceConfig, info: p4i.P4Info) -> None:
    """Raise RuntimeConfigError(INVALID_ARGUMENT) unless ``info`` is the P4Info of ``config``."""
    actual = p4info_sha256(info)
    if actual != config.p4info_sha256:
        raise RuntimeConfigError(
            "INVALID_ARGUMENT",
            f"the P4Info does not belong to the device config of {config.file} "
            f"(sha256 {actual[:12]}..., expected {config.p4info_sha256[:12]}...)",
        )


def write(path: str | Path, config: DeviceConfig) -> None:
    """Write ``config`` to ``path``."""
    Path(path).write_bytes(encode(config))


def read(path: str | Path) -> DeviceConfig:
    """Read a device config written by :func:`write`."""
    return decode(Path(path).read_bytes())
