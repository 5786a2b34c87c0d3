"""Counters, registers and meters: data-plane semantics and control-plane errors."""

from __future__ import annotations

from softswitch.runtime.externs import (
    Color,
    Counter,
    CounterData,
    CounterUnit,
    Meter,
    MeterConfig,
    MeterType,
    Register,
)
from tests.support.runtime_errors import code_of


class TestCounter:
    def test_count_read_write_reset(self) -> None:
        c = Counter("MyIngress.c", 4, CounterUnit.PACKETS_AND_BYTES)
        c.count(1, 100)
        c.count(1, 60)
        c.count(3, 1)
        assert c.read(1) == CounterData(2, 160)
        assert c.read_all() == [
            CounterData(),
            CounterData(2, 160),
            CounterData(),
            CounterData(1, 1),
        ]
        c.write(2, CounterData(7, 70))
        assert c.read(2) == CounterData(7, 70)
        c.reset(1)
        assert c.read(1) == CounterData()
        c.write(None, CounterData(1, 2))
        assert c.read_all() == [CounterData(1, 2)] * 4
        c.reset()
        assert c.read_all() == [CounterData()] * 4

    def test_index_past_the_end(self) -> None:
        c = Counter("c", 2, CounterUnit.PACKETS)
        c.count(2, 100)  # data plane: counts nothing, raises nothing
        assert c.read_all() == [CounterData(), CounterData()]
        assert code_of(c.read, 2) == "OUT_OF_RANGE"
        assert code_of(c.read, -1) == "INVALID_ARGUMENT"
        assert code_of(c.write, 5, CounterData()) == "OUT_OF_RANGE"

    def test_read_is_a_copy(self) -> None:
        c = Counter("c", 1, CounterUnit.PACKETS)
        c.read(0).packets = 99
        assert c.read(0).packets == 0


class TestRegister:
    def test_read_write_truncates(self) -> None:
        r = Register("r", 3, 8)
        r.write(0, 0x1FF)
        assert r.read(0) == 0xFF
        assert r.get(0) == 0xFF and r.get_all() == [0xFF, 0, 0]

    def test_index_past_the_end_is_bmv2s(self) -> None:
        r = Register("r", 3, 8)
        r.write(3, 5)  # nothing happens
        assert r.get_all() == [0, 0, 0]
        assert r.read(3) is None  # the destination keeps its value
        assert code_of(r.get, 3) == "OUT_OF_RANGE"
        assert code_of(r.set, 3, 1) == "OUT_OF_RANGE"
        assert code_of(r.set, 0, 256) == "OUT_OF_RANGE"

    def test_set_all_and_reset(self) -> None:
        r = Register("r", 2, 16)
        r.set(None, 9)
        assert r.get_all() == [9, 9]
        r.reset()
        assert r.get_all() == [0, 0]


class TestMeter:
    def test_unconfigured_is_green(self) -> None:
        m = Meter("m", 2, MeterType.PACKETS)
        assert [m.execute(0, 1500, t) for t in range(5)] == [Color.GREEN] * 5

    def test_packets_colour_sequence(self) -> None:
        # CIR 1000 pkt/s (0.001/us), CBS 2; PIR 2000 pkt/s, PBS 3.  By hand:
        #  t=0    P3->2 C2->1 GREEN | P2->1 C1->0 GREEN | P1->0 C0 YELLOW | P0 RED
        #  t=500  P+1=1->0, C+0=0 YELLOW
        #  t=1000 P+1=1->0, C+1=1->0 GREEN | P0 RED
        m = Meter("m", 1, MeterType.PACKETS)
        m.set_config(0, MeterConfig(1000, 2, 2000, 3))
        times = [0, 0, 0, 0, 500, 1000, 1000]
        assert [m.execute(0, 64, t) for t in times] == [0, 0, 1, 2, 1, 0, 2]

    def test_bytes_colour_sequence(self) -> None:
        # CIR 0.1 B/us (100,000 B/s), CBS 1000; PIR 0.2 B/us, PBS 1500; 600-byte packets.
        #  t=0    P1500->900 C1000->400 GREEN | P900->300 C400<600 YELLOW | P300<600 RED
        #  t=1000 P300+200=500<600 RED (C untouched)
        #  t=2000 P500+200=700->100, C400+200=600->0 GREEN
        m = Meter("m", 1, MeterType.BYTES)
        m.set_config(0, MeterConfig(100_000, 1000, 200_000, 1500))
        times = [0, 0, 0, 1000, 2000]
        assert [m.execute(0, 600, t) for t in times] == [0, 1, 2, 2, 0]

    def test_buckets_are_capped_at_burst(self) -> None:
        m = Meter("m", 1, MeterType.PACKETS)
        m.set_config(0, MeterConfig(1000, 1, 1000, 1))
        assert m.execute(0, 1, 10**9) == Color.GREEN
        assert m.execute(0, 1, 10**9) == Color.RED

    def test_config_errors_and_reads(self) -> None:
        m = Meter("m", 2, MeterType.PACKETS)
        cfg = MeterConfig(1000, 10, 2000, 20)
        assert cfg.rates_per_second() == (1000, 10, 2000, 20)
        m.set_config(None, cfg)
        assert m.get_config(1) == cfg
        m.set_config(1, None)
        assert m.get_config(1) is None
        assert code_of(m.set_config, 2, cfg) == "OUT_OF_RANGE"
        assert code_of(m.set_config, 0, MeterConfig(2000, 1, 1000, 1)) == "INVALID_ARGUMENT"
        assert code_of(m.set_config, 0, MeterConfig(1000, -1, 1000, 1)) == "INVALID_ARGUMENT"
        assert m.execute(2, 1, 0) is None
        m.reset()
        assert m.get_config(0) is None

    def test_reconfiguring_refills(self) -> None:
        m = Meter("m", 1, MeterType.PACKETS)
        m.set_config(0, MeterConfig(0, 1, 0, 1))
        assert [m.execute(0, 1, 0) for _ in range(2)] == [0, 2]
        m.set_config(0, MeterConfig(0, 1, 0, 1))
        assert m.execute(0, 1, 0) == 0


class TestMeterExactness:
    """Rates are P4Runtime's int64 per second: stored, computed and read back exactly."""

    def test_rates_near_two_to_the_63_read_back_as_written(self) -> None:
        m = Meter("m", 1, MeterType.BYTES)
        top = (1 << 63) - 1
        for cir in (top - 1, (1 << 53) + 1, top):
            cfg = MeterConfig(cir, (1 << 32) - 1, top, (1 << 32) - 1)
            m.set_config(0, cfg)
            got = m.get_config(0)
            assert got is not None
            assert got.rates_per_second() == (cir, (1 << 32) - 1, top, (1 << 32) - 1)

    def test_huge_rates_refill_exactly(self) -> None:
        # 2**63 - 1 B/s for 3 us is 27,670,116,110,564 B (floor); the bucket stops at its burst.
        m = Meter("m", 1, MeterType.BYTES)
        top = (1 << 63) - 1
        m.set_config(0, MeterConfig(top, (1 << 32) - 1, top, (1 << 32) - 1))
        assert m.execute(0, (1 << 32) - 1, 0) == Color.GREEN
        assert m.execute(0, 1, 0) == Color.RED
        assert m.execute(0, (1 << 32) - 1, 3) == Color.GREEN

    def test_refill_is_the_exact_floor_of_rate_times_time(self) -> None:
        # 10**15 + 1 B/s: from t=983,039 us to t=983,040 us exactly 10**9 tokens are made;
        # a double rate per microsecond (BMv2's) makes 10**9 + 1 there.
        m = Meter("m", 1, MeterType.BYTES)
        rate, burst = 10**15 + 1, (1 << 32) - 1
        m.set_config(0, MeterConfig(rate, burst, rate, burst))
        assert m.execute(0, burst, 983_039) == Color.GREEN  # empties both buckets
        assert m.execute(0, 10**9 + 1, 983_040) == Color.RED
        assert m.execute(0, 10**9, 983_040) == Color.GREEN

    def test_what_pi_and_bmv2_refuse_is_invalid_argument(self) -> None:
        m = Meter("m", 1, MeterType.PACKETS)
        for bad in (
            MeterConfig(-1, 1, 1, 1),
            MeterConfig(1, 1, 1, -1),
            MeterConfig(1, 1 << 32, 1, 1),
            MeterConfig(1, 1, 1, 1 << 32),
            MeterConfig(2, 1, 1, 1),
        ):
            assert code_of(m.set_config, 0, bad) == "INVALID_ARGUMENT", bad
        assert m.get_config(0) is None
