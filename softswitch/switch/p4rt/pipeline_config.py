"""SetForwardingPipelineConfig and GetForwardingPipelineConfig.

The store keeps two configs: the *committed* one, whose dataplane forwards
packets, and an optional *saved* one (VERIFY_AND_SAVE) that Read and Write use
until COMMIT makes it forward.  Writes made between the save and the commit
are made directly on the saved dataplane, which is what "replaying the write
requests since the last config was saved" amounts to.

=======================  ===================================================
VERIFY                   load the config into a scratch dataplane, drop it
VERIFY_AND_SAVE          load it; Read/Write now use it; packets do not
VERIFY_AND_COMMIT        load it; it forwards; all forwarding state is new
COMMIT                   the saved config forwards (no config in the request)
RECONCILE_AND_COMMIT     the same P4Info and device config: keep all state,
                         take the new cookie; no config yet: as
                         VERIFY_AND_COMMIT; another program: UNIMPLEMENTED
=======================  ===================================================

Verifying checks that every object the P4Info names exists, under the same
control-plane name, in the loaded dataplane.
"""

from __future__ import annotations

from dataclasses import dataclass

from finsy.proto import p4i, p4r

from softswitch.errors import RuntimeConfigError
from softswitch.switch.dataplane import Dataplane, DataplaneLoader
from softswitch.switch.p4rt.codec import Schema

Action = p4r.SetForwardingPipelineConfigRequest
NO_PIPELINE = "No forwarding pipeline config set for this device"


@dataclass(slots=True)
class LoadedConfig:
    """A verified config: the request's config, its index, its dataplane."""

    config: p4r.ForwardingPipelineConfig
    schema: Schema
    dataplane: Dataplane


class PipelineConfigs:
    """The device's committed and saved pipeline configs."""

    def __init__(self, loader: DataplaneLoader) -> None:
        self.loader = loader
        self.committed: LoadedConfig | None = None
        self.saved: LoadedConfig | None = None

    @property
    def current(self) -> LoadedConfig:
        """The config Read and Write use; FAILED_PRECONDITION when there is none."""
        loaded = self.saved or self.committed
        if loaded is None:
            raise RuntimeConfigError("FAILED_PRECONDITION", NO_PIPELINE)
        return loaded

    def install(self, config: p4r.ForwardingPipelineConfig, dataplane: Dataplane) -> None:
        """Commit an already loaded config (the PROGRAM of the command line)."""
        self.committed = LoadedConfig(config, Schema(config.p4info), dataplane)
        self.saved = None

    def set(self, request: p4r.SetForwardingPipelineConfigRequest) -> bool:
        """Apply one request; True when the forwarding dataplane changed."""
        action = request.action
        has_config = request.HasField("config")
        if action == Action.COMMIT:
            if has_config:
                raise RuntimeConfigError("INVALID_ARGUMENT", "COMMIT takes no config")
            if self.saved is None:
                raise RuntimeConfigError("FAILED_PRECONDITION", "COMMIT: no saved config")
            self.committed, self.saved = self.saved, None
            return True
        # COMMIT is done above: what is left is every action but UNSPECIFIED
        if action == Action.UNSPECIFIED or action not in Action.Action.values():
            raise RuntimeConfigError("INVALID_ARGUMENT", f"invalid action {action}")
        if not has_config:
            raise RuntimeConfigError("INVALID_ARGUMENT", "the request has no config")
        config = request.config
        if action == Action.RECONCILE_AND_COMMIT and self.committed is not None:
            return self._reconcile(config)
        loaded = self.verify(config)
        if action == Action.VERIFY_AND_SAVE:
            self.saved = loaded
            return False
        if action == Action.VERIFY:
            return False
        self.committed, self.saved = loaded, None
        return True

    def verify(self, config: p4r.ForwardingPipelineConfig) -> LoadedConfig:
        if not config.HasField("p4info"):
            raise RuntimeConfigError("INVALID_ARGUMENT", "the config has no P4Info")
        schema = Schema(config.p4info)
        dataplane = self.loader(config.p4info, config.p4_device_config)
        _check_names(schema.p4info, dataplane)
        stored = p4r.ForwardingPipelineConfig()
        stored.CopyFrom(config)
        return LoadedConfig(stored, schema, dataplane)

    def _reconcile(self, config: p4r.ForwardingPipelineConfig) -> bool:
        assert self.committed is not None
        old = self.committed.config
        if old.p4info != config.p4info or old.p4_device_config != config.p4_device_config:
            raise RuntimeConfigError(
                "UNIMPLEMENTED",
                "RECONCILE_AND_COMMIT with another program is not supported; use VERIFY_AND_COMMIT",
            )
        if config.HasField("cookie"):
            old.cookie.CopyFrom(config.cookie)
        else:
            old.ClearField("cookie")
        self.saved = None
        return False

    def get(self, response_type: int) -> p4r.ForwardingPipelineConfig:
        if self.committed is None:
            raise RuntimeConfigError("FAILED_PRECONDITION", NO_PIPELINE)
        stored = self.committed.config
        types = p4r.GetForwardingPipelineConfigRequest
        out = p4r.ForwardingPipelineConfig()
        if stored.HasField("cookie"):
            out.cookie.CopyFrom(stored.cookie)
        if response_type in (types.ALL, types.P4INFO_AND_COOKIE):
            out.p4info.CopyFrom(stored.p4info)
        if response_type in (types.ALL, types.DEVICE_CONFIG_AND_COOKIE):
            out.p4_device_config = stored.p4_device_config
        if response_type not in types.ResponseType.values():
            raise RuntimeConfigError("INVALID_ARGUMENT", f"invalid response type {response_type}")
        return out


def _check_names(p4info: p4i.P4Info, dataplane: Dataplane) -> None:
    state = dataplane.state
    kinds: list[tuple[str, list[str], dict[str, object]]] = [
        ("table", [t.preamble.name for t in p4info.tables], dict(state.tables)),
        (
            "action profile",
            [a.preamble.name for a in p4info.action_profiles],
            dict(state.action_profiles),
        ),
        ("counter", [c.preamble.name for c in p4info.counters], dict(state.counters)),
        (
            "direct counter",
            [c.preamble.name for c in p4info.direct_counters],
            dict(state.direct_counters),
        ),
        ("meter", [m.preamble.name for m in p4info.meters], dict(state.meters)),
        (
            "direct meter",
            [m.preamble.name for m in p4info.direct_meters],
            dict(state.direct_meters),
        ),
        ("register", [r.preamble.name for r in p4info.registers], dict(state.registers)),
    ]
    for label, names, present in kinds:
        for name in names:
            if name not in present:
                raise RuntimeConfigError(
                    "INVALID_ARGUMENT",
                    f"the P4Info names {label} {name!r}, which the device config does not have",
                )
