"""Percentiles, reductions against ECMP, validity and the table."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest

from experiment.plots import plot_cdf, plot_sweep
from experiment.results import (
    ModeRun,
    TransferResult,
    build_results,
    markdown_table,
    reduction,
    summarise,
    write_results,
)


def run(mode: str, fcts: list[float], repeat: int = 0, **kw: Any) -> ModeRun:
    r = ModeRun(mode, repeat, **kw)
    r.transfers = [
        TransferResult(i, "h11", "h21", 1000, f, spine="spine1" if i % 2 else "spine2")
        for i, f in enumerate(fcts)
    ]
    return r


def test_summarise_interpolates():
    s = summarise([1.0, 2.0, 3.0, 4.0, 5.0])
    assert s == {"p50": 3.0, "p95": pytest.approx(4.8), "p99": pytest.approx(4.96), "mean": 3.0}
    assert summarise([]) is None


def test_reduction_is_one_minus_ratio():
    red = reduction(
        {"p50": 1.0, "p95": 2.0, "p99": 3.0, "mean": 2.0},
        {"p50": 2.0, "p95": 2.0, "p99": 6.0, "mean": 1.0},
    )
    assert red == {"p50": 0.5, "p95": 0.0, "p99": 0.5, "mean": -1.0}
    assert reduction(None, {"p50": 1.0}) is None


def test_build_results_pools_repeats_and_computes_reductions():
    runs = [
        run("ecmp", [2.0, 4.0], repeat=0),
        run("ecmp", [2.0, 4.0], repeat=1),
        run("kv-aware", [1.0, 2.0], repeat=0, efficiency=(3, 4)),
        run("kv-aware", [1.0, 2.0], repeat=1, efficiency=(1, 4)),
    ]
    runs[0].tier_samples = {"spine": [0.5, 0.7]}
    doc = build_results(
        "s", runs, modes=["ecmp", "kv-aware"], extra={"scaling": {"time_scale": 10.0}}
    )
    ecmp = doc["modes"]["ecmp"]
    assert ecmp["n"] == 4 and ecmp["repeats"] == 2
    assert ecmp["fct_ms"]["mean"] == pytest.approx(3000.0)
    assert ecmp["fct_real_ms"]["mean"] == pytest.approx(300.0)
    assert ecmp["tier_utilisation"]["spine"]["mean"] == pytest.approx(0.6)
    assert ecmp["paths"] == {"spine1": 2, "spine2": 2}
    assert doc["reduction_vs_ecmp"]["kv-aware"]["mean"] == pytest.approx(0.5)
    assert doc["scheduling_efficiency"] == {"ecmp": None, "kv-aware": 0.5}
    assert doc["valid"] is True and doc["invalid_reasons"] == []
    json.dumps(doc)


def test_failed_transfer_or_saturation_invalidates():
    bad = run("kv-aware", [1.0], invalid_reasons=["switch leaf1 used 98% of a core"])
    bad.transfers.append(TransferResult(9, "h12", "h22", 1000, None, error="Connection refused"))
    doc = build_results("s", [run("ecmp", [2.0]), bad], modes=["ecmp", "kv-aware"])
    assert doc["valid"] is False
    assert doc["reduction_vs_ecmp"]["kv-aware"] is None
    reasons = "\n".join(doc["invalid_reasons"])
    assert "kv-aware: repeat 0: switch leaf1 used 98% of a core" in reasons
    assert "transfer 9 (h12->h22) failed: Connection refused" in reasons
    table = markdown_table(doc)
    assert "| kv-aware | 1 | invalid (see below)" in table
    assert "Verdict: **INVALID**" in table


def test_interrupted_run_is_partial():
    r = run("ecmp", [1.0])
    r.complete = False
    doc = build_results("s", [r], modes=["ecmp", "kv-aware"])
    assert doc["partial"] is True and doc["valid"] is False
    assert doc["modes"]["kv-aware"]["n"] == 0
    assert any("interrupted" in x for x in doc["invalid_reasons"])


def test_the_plot_of_a_run_interrupted_before_any_transfer_warns_of_nothing(tmp_path):
    r = run("ecmp", [])
    r.complete = False
    doc = build_results("s", [r], modes=["ecmp", "kv-aware"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Ctrl-C's output is one line, not a UserWarning
        png = plot_cdf(doc, tmp_path / "cdf.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_table_rows_and_files(tmp_path):
    doc = build_results(
        "demo",
        [run("ecmp", [2.0, 4.0]), run("kv-aware", [1.0, 2.0])],
        modes=["ecmp", "kv-aware"],
        extra={"scaling": {"time_scale": 1.0, "stands_for": ["one lab second stands for 1 s"]}},
    )
    table = markdown_table(doc)
    assert "| ecmp | 2 | 3000 | 3900 | 3980 | 3000 | - | - | - |" in table
    assert "| kv-aware | 2 | 1500 | 1950 | 1990 | 1500 | -50% | -50% | -50% |" in table
    assert "Verdict: **valid**" in table
    assert "one lab second stands for 1 s" in table
    json_path, md_path = write_results(tmp_path, doc)
    assert json.loads(json_path.read_text())["scenario"] == "demo"
    assert md_path.read_text() == table
    png = plot_cdf(doc, tmp_path / "cdf.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_sweep_plot(tmp_path):
    points = [
        {"load": x, "burst": b, "reduction": {"p99": 0.1 * x * b}, "valid": b != 2, "n": 8 * b}
        for x in (0.0, 0.5)
        for b in (1, 2)
    ]
    png = plot_sweep(points, tmp_path / "sweep.png", x_key="load", line_key="burst")
    assert png.stat().st_size > 1000


def test_decision_latency_and_retransmissions_are_reported_per_mode():
    kv = ModeRun("kv-aware", 0)
    kv.transfers = [
        TransferResult(0, "h11", "h21", 1000, 0.4, "spine1", decision_s=0.002, retransmits=0),
        TransferResult(1, "h12", "h21", 1000, 0.7, "spine2", decision_s=0.004, retransmits=9),
        TransferResult(2, "h12", "h22", 1000, None, error="refused", decision_s=0.003),
    ]
    doc = build_results("s", [run("ecmp", [0.4]), kv], modes=["ecmp", "kv-aware"])
    mode = doc["modes"]["kv-aware"]
    assert mode["decision_ms"]["p50"] == pytest.approx(3.0)
    assert mode["retransmits"] == {"segments": 9, "transfers": 1, "of": 2}
    assert mode["transfers"][1] == {
        "index": 1, "src": "h12", "dst": "h21", "spine": "spine2", "fct_ms": 700.0,
        "decision_ms": 4.0, "retransmits": 9, "error": None, "timed_out": False,
        "censored_ms": None, "room": None, "held_ms": None, "deadline_ms": None,
        "phase": None, "phase_kind": None, "floor_ms": None,
    }  # fmt: skip
    assert mode["transfers"][2]["fct_ms"] is None and mode["transfers"][2]["error"] == "refused"
    ecmp = doc["modes"]["ecmp"]
    assert ecmp["decision_ms"] is None and ecmp["retransmits"] is None


def timed_out(index: int, after_s: float, room: tuple[str, ...] | None = None) -> TransferResult:
    return TransferResult(
        index, "h11", "h21", 1000, None, "spine1", "timed out after 60s", censored_s=after_s,
        room=room,
    )  # fmt: skip


def test_a_timeout_is_a_censored_result_of_its_mode_not_an_invalid_run(tmp_path):
    kv = run("kv-aware", [1.0, 2.0, 3.0])
    kv.transfers.append(timed_out(3, 60.5))
    doc = build_results("s", [run("ecmp", [2.0, 2.0, 2.0, 2.0]), kv], modes=["ecmp", "kv-aware"])
    mode = doc["modes"]["kv-aware"]
    assert doc["valid"] is True and mode["valid"] is True and doc["invalid_reasons"] == []
    assert (mode["n"], mode["completed"], mode["timed_out"], mode["failed"]) == (4, 3, 1, 0)
    assert mode["fct_censored_ms"] == [60500.0]
    # the censored value takes part as a lower bound: p50 (ranks 1 and 2) is exact
    assert mode["fct_ms"]["p50"] == pytest.approx(2500.0)
    assert mode["fct_ms"]["mean"] == pytest.approx((1000 + 2000 + 3000 + 60500) / 4)
    assert mode["fct_ms_lower_bound"] == ["p95", "p99", "mean"]
    assert mode["transfers"][3]["timed_out"] is True
    assert mode["transfers"][3]["censored_ms"] == 60500.0
    # mode slower than ECMP at a lower bound: the change is at least that
    assert doc["reduction_bounds"]["kv-aware"] == {
        "p50": "exact", "p95": "at most", "p99": "at most", "mean": "at most",
    }  # fmt: skip
    table = markdown_table(doc)
    assert "| kv-aware | 4 (1 timed out) | 2500 | ≥" in table
    assert "kv-aware: 1 timed out" in table
    assert "| ≥+" in table and "Verdict: **valid**" in table
    assert plot_cdf(doc, tmp_path / "cdf.png").stat().st_size > 1000


def test_both_sides_censored_leave_the_reduction_out():
    kv, ecmp = run("kv-aware", [1.0, 1.0]), run("ecmp", [1.0, 1.0])
    kv.transfers.append(timed_out(2, 60.0))
    ecmp.transfers.append(timed_out(2, 60.0))
    doc = build_results("s", [ecmp, kv], modes=["ecmp", "kv-aware"])
    assert doc["reduction_vs_ecmp"]["kv-aware"] == {"p50": 0.0}
    # p50 is the middle of three values: exact; everything above it is a bound
    assert doc["modes"]["ecmp"]["fct_ms_lower_bound"] == ["p95", "p99", "mean"]
    assert doc["reduction_bounds"]["kv-aware"] == {"p50": "exact"}


def test_goals_compare_with_ecmp_and_name_timeouts_that_had_room():
    ecmp = run("ecmp", [1.0, 2.0, 3.0])
    kv = run("kv-aware", [1.0, 1.0, 1.0])
    doc = build_results("s", [ecmp, kv], modes=["ecmp", "kv-aware"])
    g = doc["goals"]
    assert g["not_worse_than_ecmp"]["mean"]["holds"] is True
    assert g["not_worse_than_ecmp"]["p99"]["holds"] is True
    assert g["no_timeout_while_room"] == {
        "holds": True, "timed_out": 0, "with_room": [], "unmeasured": 0,
    }  # fmt: skip
    assert g["holds"] is True and g["valid"] is True

    kv.transfers.append(timed_out(3, 60.0, room=("spine3",)))
    kv.transfers.append(timed_out(4, 60.0, room=()))
    doc = build_results("s", [ecmp, kv], modes=["ecmp", "kv-aware"])
    g = doc["goals"]
    # a lower bound above an exact ECMP value: worse, whatever the true value
    assert g["not_worse_than_ecmp"]["mean"]["holds"] is False
    assert g["not_worse_than_ecmp"]["mean"]["lower_bounds"] == ["kv-aware"]
    room = g["no_timeout_while_room"]
    assert room["holds"] is False and room["timed_out"] == 2
    assert room["with_room"] == [
        {"index": 3, "src": "h11", "dst": "h21", "spine": "spine1", "room": ["spine3"]}
    ]
    assert g["holds"] is False
    table = markdown_table(doc)
    assert "- not worse than ECMP at mean: **fails**" in table
    assert "t3 (h11->h21 via spine1): spine3" in table


def test_goals_undecided_when_bounds_cannot_settle_or_room_unmeasured():
    ecmp = run("ecmp", [1.0])
    ecmp.transfers.append(timed_out(1, 60.0))
    kv = run("kv-aware", [1.0, 1.0])
    kv.transfers.append(timed_out(2, 60.0))  # room not measured
    g = build_results("s", [ecmp, kv], modes=["ecmp", "kv-aware"])["goals"]
    assert g["not_worse_than_ecmp"]["mean"]["holds"] is None  # both censored, kv lower
    assert g["no_timeout_while_room"]["holds"] is None
    assert g["no_timeout_while_room"]["unmeasured"] == 1
    assert g["holds"] is None
    assert build_results("s", [ecmp], modes=["ecmp"])["goals"] is None


def test_deadlines_met_and_holds_are_counted_per_mode(tmp_path):
    late = ModeRun("kv-aware", 0)
    late.transfers = [
        TransferResult(0, "h11", "h21", 1000, 0.5, deadline_s=1.0),
        TransferResult(1, "h11", "h21", 1000, 1.5, deadline_s=1.0),
        TransferResult(2, "h11", "h21", 1000, None, deadline_s=1.0, censored_s=2.0),
    ]
    early = ModeRun("scheduled", 0)
    early.transfers = [
        TransferResult(k, "h11", "h21", 1000, 0.8, deadline_s=1.0, held_s=0.2 * k) for k in range(3)
    ]
    doc = build_results("s", [run("ecmp", [1.0, 2.0]), late, early], modes=["ecmp"])
    assert doc["modes"]["ecmp"]["deadlines"] is None
    assert doc["modes"]["kv-aware"]["deadlines"] == {"met": 1, "of": 3}
    assert doc["modes"]["scheduled"]["deadlines"] == {"met": 3, "of": 3}
    assert doc["modes"]["scheduled"]["held_ms"]["mean"] == pytest.approx(200.0)
    assert doc["modes"]["scheduled"]["transfers"][1]["held_ms"] == pytest.approx(200.0)
    assert "Deadlines met: kv-aware 1/3, scheduled 3/3." in markdown_table(doc)


def phased(
    mode: str, fcts: list[float | None], kinds: list[str], floors: list[float] | None = None
) -> ModeRun:
    r = ModeRun(mode, 1)
    r.transfers = [
        TransferResult(
            i, "h11", "h21", 1000, f, phase=0 if k == "poisson" else 1, phase_kind=k,
            floor_s=floors[i] if floors else None,
        )
        for i, (f, k) in enumerate(zip(fcts, kinds, strict=True))
    ]  # fmt: skip
    return r


KINDS = ["poisson", "poisson", "burst", "burst"]


def test_every_mode_against_the_references_overall_and_per_phase(tmp_path):
    runs = [
        phased("ecmp", [2.0, 4.0, 8.0, 8.0], KINDS),
        phased("spray", [1.0, 2.0, 4.0, 4.0], KINDS),
        phased("bound", [1.0, 1.0, 2.0, 4.0], KINDS, floors=[0.5, 0.5, 0.5, 0.5]),
    ]
    doc = build_results("s", runs, modes=["ecmp", "spray", "bound"])
    ecmp = doc["modes"]["ecmp"]
    assert ecmp["phases"]["steady"]["n"] == 2 and ecmp["phases"]["bursts"]["n"] == 2
    assert ecmp["phases"]["bursts"]["fct_ms"]["mean"] == pytest.approx(8000.0)
    vs = doc["vs_reference"]
    assert vs["ecmp"]["spray"]["all"] == {"p50": 2.0, "p99": 2.0, "mean": 2.0}
    assert vs["ecmp"]["spray"]["steady"]["mean"] == pytest.approx(3.0 / 1.5)
    assert vs["ecmp"]["bound"]["bursts"]["mean"] == pytest.approx(8.0 / 3.0)
    assert vs["spray"] == {"bound": vs["spray"]["bound"]} and "bound" not in vs["bound"]
    assert doc["vs_reference_bounds"]["ecmp"]["bound"]["all"] == dict.fromkeys(
        ("p50", "p99", "mean"), "exact"
    )
    assert doc["floor"]["fct_ms"]["p50"] == pytest.approx(500.0)
    assert doc["floor"]["beaten"] == {"ecmp": 0, "spray": 0, "bound": 0}
    table = markdown_table(doc)
    assert "| mode | phase | n | x spray p50 | x spray p99 | x spray mean | x bound p50" in table
    assert "| ecmp | all | 4 | 2.00 | 2.00 | 2.00 |" in table
    assert "|  | bursts | 2 | 2.00 | 2.00 | 2.00 | 2.67 |" in table  # 8 over 3 (2 and 4)
    assert "| spray | all | 4 | - | - | - |" in table
    assert "No transfer of any mode finished under its floor" in table
    assert plot_cdf(doc, tmp_path / "cdf.png").stat().st_size > 1000


def test_a_transfer_under_its_floor_is_flagged():
    runs = [
        phased("ecmp", [0.2, 4.0], KINDS[:2]),
        phased("bound", [1.0, 1.0], KINDS[:2], floors=[0.5, 0.5]),
    ]
    doc = build_results("s", runs, modes=["ecmp", "bound"])
    assert doc["floor"]["beaten"] == {"ecmp": 1, "bound": 0}
    assert "FINISHED UNDER THEIR FLOOR (a fault of the model): ecmp 1" in markdown_table(doc)


def test_ratios_to_a_censored_reference_are_at_most_and_an_invalid_one_gives_none():
    spray = phased("spray", [1.0, 1.0], KINDS[:2])
    spray.transfers.append(timed_out(2, 60.0))
    doc = build_results("s", [run("ecmp", [2.0, 2.0, 2.0]), spray], modes=["ecmp", "spray"])
    assert doc["vs_reference_bounds"]["ecmp"]["spray"]["all"]["mean"] == "at most"
    assert "≤" in markdown_table(doc)
    bound = phased("bound", [1.0, None], KINDS[:2])
    doc = build_results("s", [run("ecmp", [2.0, 2.0]), bound], modes=["ecmp", "bound"])
    assert doc["vs_reference"] == {} and doc["floor"] is None
    assert "Against the physical references" not in markdown_table(doc)


def test_lab_results_have_no_references_and_no_phases():
    doc = build_results("s", [run("ecmp", [1.0]), run("kv-aware", [1.0])], modes=["ecmp"])
    assert doc["vs_reference"] == {} and doc["modes"]["ecmp"]["phases"] == {}
    assert "Against the physical references" not in markdown_table(doc)
