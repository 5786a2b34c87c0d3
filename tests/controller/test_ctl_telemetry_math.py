"""Counter deltas, utilisation, smoothing, queue delay and staleness."""

from __future__ import annotations

import math

import pytest

from controller.engine.telemetry_math import (
    PortCounters,
    advance,
    counter_delta,
    ewma,
    is_stale,
    mean_packet_bytes,
    percentile,
    queue_delay_s,
    rate_bps,
    smoothing_weight,
    utilisation,
)

CAP = 20_000_000  # 20 Mb/s: 250 kB per 100 ms


def test_counter_delta_grows_wraps_and_resets() -> None:
    assert counter_delta(100, 250) == 150
    assert counter_delta(2**64 - 10, 5) == 15  # wrapped
    assert counter_delta(10**9, 300) == 300  # reset (switch restart): counts from zero
    assert counter_delta(250, 10, width_bits=8) == 16


def test_rates_and_utilisation() -> None:
    assert rate_bps(250_000, 0.1) == 20_000_000
    assert utilisation(15e6, CAP) == 0.75
    assert utilisation(25e6, CAP) == 1.0
    assert utilisation(-1.0, CAP) == 0.0
    with pytest.raises(ValueError, match="positive interval"):
        rate_bps(1, 0.0)


def test_smoothing_weight_follows_the_interval() -> None:
    assert smoothing_weight(0.1, 0.0) == 1.0
    assert smoothing_weight(0.2, 0.2) == pytest.approx(1 - math.exp(-1))
    # two polls of 100 ms forget as much as one of 200 ms
    w1 = smoothing_weight(0.1, 0.2)
    two_steps = ewma(ewma(0.0, 1.0, w1), 1.0, w1)
    assert two_steps == pytest.approx(ewma(0.0, 1.0, smoothing_weight(0.2, 0.2)))


def test_queue_delay_and_packet_size() -> None:
    assert mean_packet_bytes(15_000, 10, 1500) == 1500
    assert mean_packet_bytes(0, 0, 9000) == 9000
    assert queue_delay_s(100, 1500, CAP) == pytest.approx(0.06)
    assert queue_delay_s(-3, 1500, CAP) == 0


def test_staleness() -> None:
    assert is_stale(None, 5.0, 0.5)
    assert not is_stale(4.5, 5.0, 0.5)
    assert is_stale(4.49, 5.0, 0.5)


def test_percentile() -> None:
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile(list(range(101)), 99) == 99.0
    assert percentile([1.0, 2.0], 50) == 1.5
    with pytest.raises(ValueError, match="no values"):
        percentile([], 50)


def test_advance_first_read_sets_the_reference_only() -> None:
    st = advance(None, PortCounters(1000, 1), 0.0, CAP, 0.2)
    assert not st.sampled and st.util == 0.0 and st.sent_bytes == 0


def test_advance_computes_total_and_background_utilisation() -> None:
    st = advance(None, PortCounters(0, 0, 0), 0.0, CAP, 0.0)
    st = advance(st, PortCounters(200_000, 100, 50_000, 10), 0.1, CAP, 0.0)
    assert st.sampled
    assert st.raw_util == pytest.approx(0.8) and st.util == pytest.approx(0.8)
    assert st.bg_util == pytest.approx(0.6)  # the KV class is the engine's own business
    assert st.packet_bytes == 2000
    assert st.queue_delay_s == pytest.approx(10 * 2000 * 8 / CAP)
    assert st.sent_bytes == 200_000


def test_advance_smooths_after_the_first_sample() -> None:
    st = advance(None, PortCounters(0, 0), 0.0, CAP, 0.2)
    st = advance(st, PortCounters(250_000, 1), 0.1, CAP, 0.2)
    assert st.util == pytest.approx(1.0)  # the first sample is taken as is
    st = advance(st, PortCounters(250_000, 1), 0.2, CAP, 0.2)
    assert st.raw_util == 0.0
    assert st.util == pytest.approx(math.exp(-0.5))


def test_advance_ignores_reads_that_do_not_move_forward() -> None:
    st = advance(None, PortCounters(0, 0), 1.0, CAP, 0.2)
    assert advance(st, PortCounters(99, 1), 1.0, CAP, 0.2) is st
    assert advance(st, PortCounters(99, 1), 0.5, CAP, 0.2) is st


def test_advance_survives_a_counter_reset() -> None:
    st = advance(None, PortCounters(10**9, 10**6), 0.0, CAP, 0.0)
    st = advance(st, PortCounters(10**9 + 125_000, 10**6 + 100), 0.1, CAP, 0.0)
    st = advance(st, PortCounters(25_000, 20), 0.2, CAP, 0.0)  # the switch restarted
    assert st.raw_util == pytest.approx(0.1)
    assert st.sent_bytes == 150_000
