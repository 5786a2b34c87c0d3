"""Hash algorithms: standard check values, BMv2 field packing, v1model hash() rule."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from softswitch.errors import RuntimeConfigError
from softswitch.runtime.hashing import (
    CRC16,
    CRC32,
    Crc,
    CrcParams,
    compute,
    csum16,
    hash_fields,
    identity,
    make_hasher,
    pack_fields,
    v1model_hash,
    xor16,
)

CHECK = b"123456789"


def reference_crc(p: CrcParams, data: bytes) -> int:
    """Bit-at-a-time CRC in the Rocksoft model."""
    reg = p.init
    top = 1 << (p.width - 1)
    mask = (1 << p.width) - 1
    for raw in data:
        byte = int(f"{raw:08b}"[::-1], 2) if p.reflect_in else raw
        reg ^= byte << (p.width - 8)
        for _ in range(8):
            reg = ((reg << 1) ^ p.poly) & mask if reg & top else (reg << 1) & mask
    if p.reflect_out:
        reg = int(f"{reg:0{p.width}b}"[::-1], 2)
    return reg ^ p.xor_out


def reference_csum16(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = 0
    for i in range(0, len(data), 2):
        total += (data[i] << 8) | data[i + 1]
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


class TestCheckValues:
    def test_standard_crcs(self) -> None:
        assert compute("crc32", CHECK) == 0xCBF43926
        assert compute("crc16", CHECK) == 0xBB3D  # CRC-16/ARC, BMv2's crc16
        assert compute("crc_ccitt", CHECK) == 0x29B1  # CRC-16/CCITT-FALSE
        assert compute("crc16_custom", CHECK) == 0xBB3D  # BMv2's default parameters
        assert compute("crc32_custom", CHECK) == 0xCBF43926

    def test_custom_crc_reconfigured(self) -> None:
        crc = Crc(CRC16)
        crc.configure(CrcParams(16, 0x1021, 0, 0, False, False))
        assert crc(CHECK) == 0x31C3  # CRC-16/XMODEM
        crc.configure(CrcParams(32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, True, True))
        assert crc(CHECK) == 0xE3069283  # CRC-32C
        crc.configure(CrcParams(32, 0x04C11DB7, 0xFFFFFFFF, 0xFFFFFFFF, False, False))
        assert crc(CHECK) == 0xFC891918  # CRC-32/BZIP2
        with pytest.raises(RuntimeConfigError):
            crc.configure(CrcParams(12, 0x80F, 0, 0, False, False))

    def test_internet_checksum(self) -> None:
        header = bytes.fromhex("450000730000400040110000c0a80001c0a800c7")
        assert csum16(header) == 0xB861
        assert csum16(b"") == 0xFFFF
        assert csum16(b"\xff\xff") == 0x0000

    def test_xor16_and_identity(self) -> None:
        assert xor16(bytes.fromhex("1234abcd56")) == 0x1234 ^ 0xABCD ^ 0x5600
        assert identity(bytes.fromhex("0102")) == 0x0102
        assert identity(bytes(range(1, 11))) == 0x0102030405060708

    def test_random_is_injectable_and_unknown_is_unimplemented(self) -> None:
        a = make_hasher("random", rng=random.Random(7))
        b = make_hasher("random", rng=random.Random(7))
        assert [a(b"") for _ in range(3)] == [b(b"x") for _ in range(3)]
        with pytest.raises(RuntimeConfigError) as info:
            make_hasher("md5")
        assert info.value.code == "UNIMPLEMENTED"


@given(
    params=st.builds(
        CrcParams,
        width=st.sampled_from([8, 16, 32]),
        poly=st.integers(1, 0xFF),
        init=st.integers(0, 0xFF),
        xor_out=st.integers(0, 0xFF),
        reflect_in=st.booleans(),
        reflect_out=st.booleans(),
    ),
    data=st.binary(max_size=20),
)
def test_crc_matches_bitwise_reference(params: CrcParams, data: bytes) -> None:
    assert Crc(params)(data) == reference_crc(params, data)


@given(st.binary(max_size=64))
def test_csum16_matches_reference(data: bytes) -> None:
    assert csum16(data) == reference_csum16(data)


@given(st.binary(max_size=64))
def test_named_crcs_match_reference(data: bytes) -> None:
    assert compute("crc16", data) == reference_crc(CRC16, data)
    assert compute("crc32", data) == reference_crc(CRC32, data)


class TestPacking:
    def test_fields_are_packed_msb_first_and_padded_at_the_end(self) -> None:
        assert pack_fields([(0x1, 4), (0xABC, 12), (1, 1)]) == bytes.fromhex("1abc80")
        assert pack_fields([(0x0A000001, 32), (0x11, 8)]) == bytes.fromhex("0a00000111")
        assert pack_fields([(0x3, 2)]) == b"\xc0"
        assert pack_fields([]) == b""

    def test_values_are_truncated_to_their_width(self) -> None:
        assert pack_fields([(0x1FF, 8)]) == b"\xff"

    def test_hash_fields(self) -> None:
        assert hash_fields("crc32", [(0x31, 8), (0x32, 8)]) == compute("crc32", b"12")


class TestV1modelHash:
    def test_base_plus_modulo(self) -> None:
        h = hash_fields("crc16", [(0xDEADBEEF, 32)])
        assert v1model_hash("crc16", 100, [(0xDEADBEEF, 32)], 7, 16) == 100 + h % 7

    def test_max_zero_gives_base(self) -> None:
        assert v1model_hash("crc32", 5, [(1, 8)], 0, 16) == 5

    def test_result_is_truncated_to_its_width(self) -> None:
        h = hash_fields("crc32", [(1, 8)])
        assert v1model_hash("crc32", 0, [(1, 8)], 1 << 32, 8) == h & 0xFF
        assert v1model_hash("identity", 0xFF, [(1, 8)], 2, 8) == (0xFF + 1) & 0xFF
