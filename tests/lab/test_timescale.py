"""The lab in the production regime: the controller's time constants scaled by the run's."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from controller.config import ControllerSettings
from controller.service.metrics import Metrics
from experiment.fabric import fabric_from_params
from experiment.scenario import load_scenario
from lab.control import poll_seconds
from lab.run import Experiment, Plan, controller_time, plan_experiment
from lab.timescale import TimeScaleError, check_poll_floor, scale_controller

from .test_plan import SCENARIOS


def scaled_plan(name: str, **transfer: Any) -> Plan:
    s = load_scenario(SCENARIOS / f"{name}.yaml")
    if transfer:
        s = dataclasses.replace(s, transfer=dataclasses.replace(s.transfer, **transfer))
    fabric = fabric_from_params(s.fabric, s.name)
    return plan_experiment(Experiment(s, fabric, Path("/tmp/unused"), scale_controller_time=True))


def test_a_scaled_lab_transfer_spans_as_many_polls_as_the_real_one() -> None:
    plan = scaled_plan("design-example")
    k = plan.scaling.time_scale
    # 1 MB at 20 Mb/s stands for 1.34 GB at 400 Gb/s: one lab second is 64 ms
    assert k == pytest.approx(1e6 / (1_342_177_280 * 20e6 / 400e9))
    assert plan.controller_time_scale == k
    assert plan.fabric.controller.telemetry.poll_interval_s == pytest.approx(0.1 * k)
    ratios = plan.scaling.as_dict()["ratios"]
    assert isinstance(ratios, dict)
    lab, real = ratios["lab"]["transfer_time_over_poll"], ratios["real"]["transfer_time_over_poll"]
    assert real == pytest.approx(0.268, abs=1e-3)
    assert lab == pytest.approx(real)
    # the warm-up lets the smoothed background settle: 3 smoothing constants and a poll
    assert plan.warmup_s == pytest.approx(3 * 0.2 * k + 0.1 * k)
    assert controller_time(plan)["scaled_by"] == k


def test_unscaled_runs_keep_the_real_constants() -> None:
    s = load_scenario(SCENARIOS / "design-example.yaml")
    plan = plan_experiment(Experiment(s, fabric_from_params(s.fabric, s.name), Path("/tmp/x")))
    assert plan.controller_time_scale is None
    assert plan.fabric.controller.telemetry.poll_interval_s == 0.1
    assert plan.warmup_s == s.run.warmup_s
    ratios = plan.scaling.as_dict()["ratios"]
    assert isinstance(ratios, dict)
    assert ratios["lab"]["transfer_time_over_poll"] == pytest.approx(4.0)


def test_every_real_time_constant_is_scaled_and_nothing_else() -> None:
    d = ControllerSettings()
    s = scale_controller(d, 10.0, real_poll_s=0.05)
    assert s.telemetry.poll_interval_s == pytest.approx(0.5)  # the scenario's real poll
    assert s.telemetry.staleness_limit_s == pytest.approx(10 * d.telemetry.staleness_limit_s)
    assert s.telemetry.smoothing_s == pytest.approx(10 * d.telemetry.smoothing_s)
    assert s.audit_interval_s == pytest.approx(10 * d.audit_interval_s)
    assert s.audit_hold_s == pytest.approx(10 * d.audit_hold_s)
    for section, names in {
        "safety": ["reroute_window_s", "quiet_period_s", "transfer_timeout_s"],
        "alerts": ["window_s", "p99_limit_s", "median_window_s"],
    }.items():
        for name in names:
            before, after = getattr(getattr(d, section), name), getattr(getattr(s, section), name)
            assert after == pytest.approx(10 * before), name
    # ratios, counts and the data plane's packet-gap timer are not time constants to scale
    assert s.selection == d.selection
    assert s.flowlet_timeout_s == d.flowlet_timeout_s
    assert s.audit_misses == d.audit_misses
    assert s.safety.slow_factor == d.safety.slow_factor
    assert s.safety.reroute_limit == d.safety.reroute_limit
    with pytest.raises(TimeScaleError, match="must be positive"):
        scale_controller(d, 0.0, real_poll_s=0.1)


def test_a_scale_that_pushes_a_setting_out_of_range_names_it() -> None:
    with pytest.raises(TimeScaleError) as exc:
        scaled_plan("design-example", lab_bytes=None, time_scale=1000.0)
    message = str(exc.value)
    assert message.startswith("--scale-controller-time: a time scale of 1000 puts ")
    assert "controller.telemetry.poll_interval out of range" in message


def test_polling_faster_than_the_switches_answer_is_refused() -> None:
    check_poll_floor(0.1, 0.004)
    check_poll_floor(0.1, None)  # not measured (a control with no poller)
    with pytest.raises(TimeScaleError) as exc:
        check_poll_floor(0.002, 0.004)
    assert str(exc.value).startswith(
        "--scale-controller-time: the scaled polling period (2 ms) is shorter than one "
        "poll of every switch takes here (4 ms,"
    )


def test_the_poll_time_comes_from_the_controllers_own_histogram() -> None:
    metrics = Metrics()
    assert poll_seconds(metrics.render().decode()) is None
    for seconds in (0.002, 0.004, 0.006):
        metrics.poll_seconds.observe(seconds)
    assert poll_seconds(metrics.render().decode()) == pytest.approx(0.004)
