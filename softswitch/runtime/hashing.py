"""v1model hash algorithms, computed over fields packed the way BMv2 packs them.

BMv2 serialises a field list into a byte buffer by writing each field's bits
right after the previous field's, most significant bit first, with no
padding between fields; the buffer is padded with zero bits at the *end* up
to a whole byte.  :func:`pack_fields` does the same from ``(value, width)``
pairs, and the algorithms then run over those bytes:

    crc32         CRC-32 (reflected, poly 0x04C11DB7, init and xorout all ones)
    crc16         CRC-16/ARC (reflected, poly 0x8005, init 0, xorout 0)
    crc_ccitt     CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF), BMv2's crcCCITT
    crc16_custom, crc32_custom
                  a CRC whose parameters the control plane may change; they
                  start as crc16's and crc32's, as in BMv2
    csum16        the Internet checksum (RFC 1071): ones' complement of the
                  ones' complement sum of 16-bit big-endian words, the last
                  odd byte padded with a zero byte
    xor16         XOR of the 16-bit big-endian words, same padding
    identity      the first 8 bytes (or fewer) as a big-endian integer
    random        a pseudo-random number (the generator can be injected)

v1model's ``hash(out result, algo, base, data, max)`` is :func:`v1model_hash`:
``base + (H(data) % max)`` as BMv2's ``modify_field_with_hash_based_offset``
computes it, truncated to the width of ``result``; v1model documents that
``max == 0`` gives ``base`` (BMv2 would divide by zero).
"""

from __future__ import annotations

import binascii
import random as _random
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from softswitch.errors import RuntimeConfigError

Hasher = Callable[[bytes], int]

ALGORITHMS = (
    "crc32",
    "crc32_custom",
    "crc16",
    "crc16_custom",
    "crc_ccitt",
    "random",
    "identity",
    "csum16",
    "xor16",
)


def pack_fields(fields: Iterable[tuple[int, int]]) -> bytes:
    """Concatenate ``(value, width)`` fields MSB first, zero-padded at the end to a byte."""
    acc = 0
    nbits = 0
    for value, width in fields:
        acc = (acc << width) | (value & ((1 << width) - 1))
        nbits += width
    pad = -nbits % 8
    return (acc << pad).to_bytes((nbits + pad) // 8, "big")


@dataclass(frozen=True, slots=True)
class CrcParams:
    """A CRC in the Rocksoft model (the parameters BMv2's custom CRCs take)."""

    width: int
    poly: int
    init: int
    xor_out: int
    reflect_in: bool
    reflect_out: bool


CRC16 = CrcParams(16, 0x8005, 0x0000, 0x0000, True, True)
CRC32 = CrcParams(32, 0x04C11DB7, 0xFFFFFFFF, 0xFFFFFFFF, True, True)
CRC_CCITT = CrcParams(16, 0x1021, 0xFFFF, 0x0000, False, False)


def _reflect(value: int, nbits: int) -> int:
    out = 0
    for _ in range(nbits):
        out = (out << 1) | (value & 1)
        value >>= 1
    return out


_REFLECT8 = bytes(_reflect(b, 8) for b in range(256))


class Crc:
    """A table-driven CRC; ``configure`` changes its parameters in place."""

    __slots__ = ("_fn", "params")

    def __init__(self, params: CrcParams) -> None:
        self.params = params
        self._fn: Hasher = self._build(params)

    def configure(self, params: CrcParams) -> None:
        if params.width not in (8, 16, 32, 64) or params.poly >> params.width:
            raise RuntimeConfigError("INVALID_ARGUMENT", f"unsupported CRC parameters {params}")
        self.params = params
        self._fn = self._build(params)

    def __call__(self, data: bytes) -> int:
        return self._fn(data)

    @staticmethod
    def _build(p: CrcParams) -> Hasher:
        width, top, mask = p.width, 1 << (p.width - 1), (1 << p.width) - 1
        if p.reflect_in and p.reflect_out:
            rpoly = _reflect(p.poly, width)
            rtable = []
            for byte in range(256):
                reg = byte
                for _ in range(8):
                    reg = (reg >> 1) ^ rpoly if reg & 1 else reg >> 1
                rtable.append(reg)
            rinit, xor_out = _reflect(p.init, width), p.xor_out

            def reflected(data: bytes) -> int:
                reg = rinit
                for b in data:
                    reg = rtable[(reg ^ b) & 0xFF] ^ (reg >> 8)
                return reg ^ xor_out

            return reflected
        table = []
        for byte in range(256):
            reg = byte << (width - 8)
            for _ in range(8):
                reg = ((reg << 1) ^ p.poly) & mask if reg & top else (reg << 1) & mask
            table.append(reg)
        shift, init, refin, refout = width - 8, p.init, p.reflect_in, p.reflect_out

        def normal(data: bytes) -> int:
            reg = init
            if refin:
                data = data.translate(_REFLECT8)
            for b in data:
                reg = table[((reg >> shift) ^ b) & 0xFF] ^ ((reg << 8) & mask)
            if refout:
                reg = _reflect(reg, width)
            return reg ^ p.xor_out

        return normal


def crc32(data: bytes) -> int:
    return zlib.crc32(data)


crc16: Hasher = Crc(CRC16)


def crc_ccitt(data: bytes) -> int:
    return binascii.crc_hqx(data, 0xFFFF)


def csum16(data: bytes) -> int:
    """The Internet checksum of ``data`` (RFC 1071)."""
    if len(data) % 2:
        data += b"\x00"
    # 2**16 == 1 (mod 0xFFFF): the ones' complement sum of the words is the
    # number the bytes spell, mod 0xFFFF (0xFFFF rather than 0 unless all zero).
    n = int.from_bytes(data, "big")
    total = 0 if n == 0 else (n % 0xFFFF or 0xFFFF)
    return ~total & 0xFFFF


def xor16(data: bytes) -> int:
    if len(data) % 2:
        data += b"\x00"
    out = 0
    for i in range(0, len(data), 2):
        out ^= (data[i] << 8) | data[i + 1]
    return out


def identity(data: bytes) -> int:
    return int.from_bytes(data[:8], "big")


# The algorithms whose hash function is one and the same everywhere.
_FIXED: dict[str, Hasher] = {
    "crc32": crc32,
    "crc16": crc16,
    "crc_ccitt": crc_ccitt,
    "csum16": csum16,
    "xor16": xor16,
    "identity": identity,
}


def make_hasher(
    algorithm: str, params: CrcParams | None = None, rng: _random.Random | None = None
) -> Hasher:
    """A function from bytes to the raw hash for ``algorithm``.

    A ``*_custom`` algorithm gets its own :class:`Crc` (initial parameters
    ``params`` or the BMv2 defaults), which the control plane can reconfigure.
    """
    fixed = _FIXED.get(algorithm)
    if fixed is not None:
        return fixed
    if algorithm == "crc16_custom":
        return Crc(params or CRC16)
    if algorithm == "crc32_custom":
        return Crc(params or CRC32)
    if algorithm == "random":
        gen = rng or _random.Random()
        return lambda data: gen.getrandbits(32)
    raise RuntimeConfigError("UNIMPLEMENTED", f"unknown hash algorithm '{algorithm}'")


_SHARED: dict[str, Hasher] = {}


def compute(algorithm: str, data: bytes) -> int:
    """The raw hash of ``data`` (custom CRCs with their default parameters)."""
    hasher = _SHARED.get(algorithm)
    if hasher is None:
        hasher = _SHARED[algorithm] = make_hasher(algorithm)
    return hasher(data)


def hash_fields(algorithm: str, fields: Iterable[tuple[int, int]]) -> int:
    """The raw hash of ``(value, width)`` fields packed as BMv2 packs them."""
    return compute(algorithm, pack_fields(fields))


def hash_offset(raw: int, base: int, max_: int, width: int) -> int:
    """v1model ``hash()``'s result from a raw hash: ``base + raw % max``, ``width`` bits."""
    value = base + raw % max_ if max_ > 0 else base
    return value & ((1 << width) - 1)


def v1model_hash(
    algorithm: str, base: int, fields: Iterable[tuple[int, int]], max_: int, width: int
) -> int:
    """v1model ``hash(result, algo, base, data, max)`` with ``result`` of ``width`` bits."""
    return hash_offset(hash_fields(algorithm, fields), base, max_, width)
