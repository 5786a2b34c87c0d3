"""The lab in the production regime: the controller's clock slowed down with the fabric's.

A lab run dilates time by the scenario's ``time_scale`` (lab seconds per real second,
:mod:`experiment.kvsize`): a 1.34 GB transfer that takes 27 ms at 400 Gb/s is 1 MB that
takes 0.42 s at 20 Mb/s. The controller, by default, keeps its real time constants:
it polls every 100 ms of lab time, so a lab transfer spans four polls where a real
one spans a quarter of one, and the lab is kinder to a polling controller than a
real fabric is. ``kvfabric experiment --scale-controller-time`` multiplies the
controller's time constants by the same time scale, so that every ratio of a
transfer's time to the controller's reaction times is the real fabric's:

- the polling period becomes the scenario's ``real_poll_interval`` times the scale
  (transfer time over polling period is then the real one, 0.27 for the design);
- the telemetry's staleness limit and smoothing time constant;
- the audit's round interval and hold time (how long a cable must look dead);
- the latency figures of the safety rules and alerts that are real durations:
  transfer timeouts (floor and ceiling), the reroute window and quiet period, the
  p99 limit and the alert windows (the rolling median's 7 days included).

What is not scaled: ratios and counts (hysteresis, slow factor, reroute limit...),
the data plane's flowlet timeout (a gap between packets, whose timing the lab does
not dilate: its round trip is milliseconds either way), and per-pair baselines,
which the engine learns from measured lab durations and so are in lab time already.

:func:`scale_controller` is pure; :func:`check_scaled` parses the scaled settings
back the way the controller will read them, so a scale that pushes a setting out of
its range is an error naming the setting, before anything starts.
:func:`check_poll_floor` refuses a polling period shorter than one poll of every
switch takes (the controller's own ``kvfabric_telemetry_poll_seconds``): below it,
the poller runs back to back and the period the run claims is not the one it had.
"""

from __future__ import annotations

import dataclasses

from controller.config import ControllerSettings, FabricConfig, parse_config
from controller.config.generate import to_yaml
from controller.errors import ConfigError
from lab.errors import LabError

OPTION = "--scale-controller-time"

SETTLE_SMOOTHINGS = 3.0
"""Warm-up, in smoothing time constants, before the first transfer of a scaled run:
the controller's average of the background reaches 95% of it (a production
controller has watched the background for far longer than a lab warm-up)."""


class TimeScaleError(LabError):
    """The time scale cannot be applied to the controller's settings."""


def scale_controller(
    settings: ControllerSettings, scale: float, real_poll_s: float
) -> ControllerSettings:
    """``settings`` with every real-time constant multiplied by ``scale`` (see above).

    The polling period is ``real_poll_s * scale``, so that a lab transfer spans as
    many polls as the real one it stands for.
    """
    if not scale > 0:
        raise TimeScaleError(f"{OPTION}: the time scale must be positive, got {scale:g}")
    t, s, a = settings.telemetry, settings.safety, settings.alerts
    poll = real_poll_s * scale
    return dataclasses.replace(
        settings,
        telemetry=dataclasses.replace(
            t,
            poll_interval_s=poll,
            staleness_limit_s=max(t.staleness_limit_s * scale, poll),
            smoothing_s=t.smoothing_s * scale,
        ),
        safety=dataclasses.replace(
            s,
            reroute_window_s=s.reroute_window_s * scale,
            quiet_period_s=s.quiet_period_s * scale,
            transfer_timeout_s=s.transfer_timeout_s * scale,
            transfer_timeout_max_s=s.transfer_timeout_max_s * scale,
        ),
        alerts=dataclasses.replace(
            a,
            window_s=a.window_s * scale,
            p99_limit_s=a.p99_limit_s * scale,
            median_window_s=a.median_window_s * scale,
        ),
        audit_interval_s=settings.audit_interval_s * scale,
        audit_hold_s=settings.audit_hold_s * scale,
    )


def check_scaled(fabric: FabricConfig, scale: float) -> None:
    """Parse ``fabric`` back as the controller will; a setting out of range is an error
    that names it and the scale that put it there."""
    try:
        parse_config(to_yaml(fabric), f"the fabric with {OPTION}")
    except ConfigError as exc:
        raise TimeScaleError(
            f"{OPTION}: a time scale of {scale:.4g} puts {exc.path} out of range: "
            f"{exc.message}; choose the scenario's lab_bytes or time_scale so that the scale "
            "is smaller"
        ) from None


def settle_s(settings: ControllerSettings, warmup_s: float) -> float:
    """The warm-up of a scaled run: the scenario's, or :data:`SETTLE_SMOOTHINGS`
    smoothing constants and a poll if that is longer."""
    t = settings.telemetry
    return max(warmup_s, SETTLE_SMOOTHINGS * t.smoothing_s + t.poll_interval_s)


def check_poll_floor(poll_interval_s: float, poll_seconds: float | None) -> None:
    """Refuse a polling period shorter than a measured poll of every switch."""
    if poll_seconds is not None and poll_interval_s < poll_seconds:
        raise TimeScaleError(
            f"{OPTION}: the scaled polling period ({poll_interval_s * 1e3:.3g} ms) is shorter "
            f"than one poll of every switch takes here ({poll_seconds * 1e3:.3g} ms, the "
            "controller's kvfabric_telemetry_poll_seconds): the Python switches cannot answer "
            "that fast; use a larger time scale (larger lab_bytes)"
        )
