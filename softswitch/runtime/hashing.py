"""v1model hash algorithms (STUB: signatures final)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

ALGORITHMS = (
    "crc32",
    "crc32_custom",
    "crc16",
    "crc16_custom",
    "random",
    "identity",
    "csum16",
    "xor16",
)


@dataclass(frozen=True, slots=True)
class CrcParams:
    width: int
    poly: int
    init: int
    xor_out: int
    reflect_in: bool
    reflect_out: bool


def pack_fields(fields: Sequence[tuple[int, int]]) -> bytes:
    raise NotImplementedError


def compute(algorithm: str, data: bytes, custom: CrcParams | None = None) -> int:
    raise NotImplementedError


def hash_fields(algorithm: str, fields: Sequence[tuple[int, int]]) -> int:
    raise NotImplementedError


def v1model_hash(
    algorithm: str, base: int, fields: Sequence[tuple[int, int]], max_: int, width: int
) -> int:
    raise NotImplementedError
