"""P4Info generation, identical to ``p4c-bm2-ss --p4runtime-files``.

    ir.Program --extract--> model.Model --build_p4info--> p4.config.v1.P4Info --to_text--> bytes

Public API::

    load(path, include_dirs=(), defines={}) -> ir.Program     # the front-end, re-exported
    extract_model(program: ir.Program) -> model.Model         # control-plane objects, p4c order
    build_p4info(model: model.Model) -> P4Info                # ids, aliases, every field
    p4info_of(program: ir.Program) -> P4Info                  # extract_model + build_p4info
    to_text(info) -> str                                      # p4c's .txtpb bytes
    to_json(info) -> str; to_binary(info) -> bytes
    write_p4info(info, path, fmt)                             # fmt: "text" | "json" | "binary"

Modules: :mod:`~softswitch.p4info.ids` (p4c's id hash, probing and aliases),
:mod:`~softswitch.p4info.model`, :mod:`~softswitch.p4info.extract` (with
:mod:`~softswitch.p4info.layout`: where p4c's front-end leaves a block's declarations),
:mod:`~softswitch.p4info.emit`, :mod:`~softswitch.p4info.device_config` (with
:mod:`~softswitch.p4info.pi_config`: PI's ``P4DeviceConfig`` wrapper, decoded by hand).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from finsy.proto import p4i

from softswitch.frontend import ir, load_program
from softswitch.p4info.emit import build_p4info, to_binary, to_json, to_text
from softswitch.p4info.extract import extract_model

__all__ = [
    "build_p4info",
    "extract_model",
    "load",
    "p4info_of",
    "to_binary",
    "to_json",
    "to_text",
    "write_p4info",
]


def load(
    path: str, include_dirs: Sequence[str] = (), defines: Mapping[str, str] | None = None
) -> ir.Program:
    """The elaborated program at ``path`` (see :func:`softswitch.frontend.load_program`)."""
    return load_program(path, include_dirs, defines or {})


def p4info_of(program: ir.Program) -> p4i.P4Info:
    """The P4Info message of ``program``."""
    return build_p4info(extract_model(program))


def write_p4info(info: p4i.P4Info, path: str | Path, fmt: str) -> None:
    """Write ``info`` to ``path`` as ``text`` (p4c's .txtpb), ``json`` or ``binary``."""
    if fmt == "text":
        Path(path).write_text(to_text(info), encoding="utf-8")
    elif fmt == "json":
        Path(path).write_text(to_json(info), encoding="utf-8")
    elif fmt == "binary":
        Path(path).write_bytes(to_binary(info))
    else:
        raise ValueError(f"unknown P4Info format {fmt!r}")
