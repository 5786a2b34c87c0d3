"""The KV-size calculator and the lab scaling."""

from __future__ import annotations

import pytest

from experiment.kvsize import Dtype, Setting, kv_bytes, preset, scale_to_lab


def test_llama3_70b_4096_tokens_bf16_is_1_34_gb():
    size = kv_bytes("llama-3-70b", 4096, "bf16")
    assert size == 2 * 80 * 8 * 128 * 2 * 4096 == 1_342_177_280
    assert round(size / 1e9, 2) == 1.34


def test_fp8_halves_bf16():
    assert kv_bytes("llama-3-70b", 4096, Dtype.FP8) * 2 == kv_bytes("llama-3-70b", 4096)


def test_per_token_sizes_of_presets():
    assert preset("llama-3-70b").bytes_per_token() == 320 * 1024
    assert preset("llama-3-8b").bytes_per_token() == 128 * 1024
    assert preset("llama-3.1-405b").bytes_per_token() == 2 * 126 * 8 * 128 * 2
    assert preset("mixtral-8x7b").bytes_per_token() == 128 * 1024
    assert preset("qwen2-72b").bytes_per_token() == 320 * 1024
    # Multi-head attention (no GQA) costs four times Llama-3-8B's cache per token.
    assert preset("llama-2-7b").bytes_per_token() == 4 * preset("llama-3-8b").bytes_per_token()


def test_preset_names_are_forgiving_and_errors_guess():
    assert preset("Llama-3-70B") is preset("llama-3-70b")
    assert preset("llama-3-405b").layers == 126
    with pytest.raises(KeyError, match="did you mean 'llama-3-70b'"):
        preset("llama3-70b")


def test_negative_tokens_rejected():
    with pytest.raises(ValueError):
        kv_bytes("llama-3-8b", -1)


REAL = Setting(link_bps=400e9, poll_interval_s=0.1, rtt_s=10e-6)
LAB = Setting(link_bps=20e6, poll_interval_s=0.1, rtt_s=2e-3)


def test_default_scaling_keeps_transfer_time_over_poll():
    s = scale_to_lab(1_342_177_280, REAL, LAB, concurrency=2, spines=2)
    assert s.time_scale == pytest.approx(1.0)
    assert s.lab_ratios.transfer_over_poll == pytest.approx(
        s.real_ratios.transfer_over_poll, rel=1e-4
    )
    # 1.34 GB at 400 Gb/s is 26.8 ms; so is the lab transfer at 20 Mb/s: 67 kB.
    assert s.lab_bytes == pytest.approx(67_109, abs=1)
    assert s.real_ratios.concurrency_over_spines == 1.0


def test_lab_bytes_fix_the_time_scale():
    s = scale_to_lab(1_342_177_280, REAL, LAB, concurrency=1, spines=2, lab_bytes=2_000_000)
    assert s.lab_bytes == 2_000_000
    assert s.time_scale == pytest.approx(2_000_000 / 67_108.864)
    # 0.8 s in the lab stands for 26.8 ms of the real fabric.
    assert s.real_seconds(0.8) == pytest.approx(0.0268, rel=1e-2)
    text = "\n".join(s.describe())
    assert "2 MB at 20 Mb/s stands for 1.34 GB at 400 Gb/s" in text
    assert s.as_dict()["time_scale"] == s.time_scale


def test_time_scale_and_lab_bytes_exclusive():
    with pytest.raises(ValueError):
        scale_to_lab(1, REAL, LAB, concurrency=1, spines=1, time_scale=2, lab_bytes=3)


def test_size_over_bdp():
    s = scale_to_lab(1_342_177_280, REAL, LAB, concurrency=1, spines=1)
    assert s.real_ratios.size_over_bdp == pytest.approx(1_342_177_280 / 500_000)
