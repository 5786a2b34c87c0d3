"""Who serves what: each switch's state for this controller, the overall role, refusals.

Pure functions of what the service knows about its channels. A switch is, for this
controller:

- ``connecting``: no connection attempt has finished yet (a cold start);
- ``down``: no channel (the last attempt failed, or the channel closed);
- ``backup``: connected, and another controller is the primary;
- ``provisioning``: connected as primary, and not yet provisioned, or provisioned but
  without a telemetry sample taken since (the engine would send every transfer that
  needs it to ECMP for "stale telemetry"), for at most a grace period;
- ``primary``: provisioned as primary and sampled since.

The overall role is ``primary`` when this controller is the primary of every switch
it reaches (switches down do not make it anything else), ``backup`` when it is the
backup of every switch it reaches, ``mixed`` only when it is both (two controllers
share the fabric), and ``disconnected`` when it reaches none.

A request names the switches it needs (:func:`refusal`): it is refused (503) when
this controller is the backup of one of them (the primary must serve it: two
controllers handing out tags and pins for one leaf would collide), or while one of
them is connecting or provisioning (a retry a moment later is served in full). A
switch that is down does not refuse the request: the engine leaves a spine without
telemetry out of the candidates, and a transfer whose source leaf is down takes
ECMP, which its answer says (the data plane may well forward; only the controller
lost it).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum


class SwitchState(StrEnum):
    """A switch's state for this controller (see the module docstring)."""

    CONNECTING = "connecting"
    DOWN = "down"
    BACKUP = "backup"
    PROVISIONING = "provisioning"
    PRIMARY = "primary"


_WAITING = {
    SwitchState.CONNECTING: "connecting",
    SwitchState.PROVISIONING: "being provisioned; no telemetry sample since",
}


def switch_state(
    *,
    up: bool,
    primary: bool,
    tried: int,
    provisioned_at: float | None,
    sampled_at: float | None,
    now: float,
    grace_s: float,
    polled: bool = True,
) -> SwitchState:
    """One switch's state; ``polled`` False for a switch without telemetry to wait for.

    A provisioned switch waits for its first sample at most ``grace_s``: a switch whose
    counters cannot be read must not refuse every request for ever (the engine then
    answers ECMP, saying why).
    """
    if not up:
        return SwitchState.DOWN if tried else SwitchState.CONNECTING
    if not primary:
        return SwitchState.BACKUP
    if provisioned_at is None:
        return SwitchState.PROVISIONING
    waiting = sampled_at is None or sampled_at < provisioned_at
    if polled and waiting and now - provisioned_at <= grace_s:
        return SwitchState.PROVISIONING
    return SwitchState.PRIMARY


def overall_role(states: Mapping[str, SwitchState]) -> str:
    """``primary``, ``backup``, ``mixed`` or ``disconnected`` (see the module docstring)."""
    ours = any(s in (SwitchState.PRIMARY, SwitchState.PROVISIONING) for s in states.values())
    theirs = any(s is SwitchState.BACKUP for s in states.values())
    if ours and theirs:
        return "mixed"
    if ours:
        return "primary"
    return "backup" if theirs else "disconnected"


def refusal(states: Mapping[str, SwitchState], needed: list[str]) -> str | None:
    """Why a request needing the switches ``needed`` is refused now; None: serve it."""
    if all(s in (SwitchState.DOWN, SwitchState.CONNECTING) for s in states.values()):
        waiting = [n for n, s in states.items() if s is SwitchState.CONNECTING]
        if waiting:
            return f"the fabric is not provisioned yet: connecting to {', '.join(waiting)}"
        return "the fabric is not provisioned: no switch is reachable (every channel is down)"
    backup = [n for n in needed if states.get(n) is SwitchState.BACKUP]
    if backup:
        return (
            f"this controller is the backup for {', '.join(backup)}; "
            "send this request to the primary controller"
        )
    waiting = [f"{n} ({_WAITING[s]})" for n in needed if (s := states.get(n)) in _WAITING]
    if waiting:
        return f"not ready yet: waiting for {', '.join(waiting)}"
    return None
