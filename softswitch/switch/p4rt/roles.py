"""Role configurations: which part of the pipeline a controller role may drive.

P4Runtime carries a role's configuration as a ``google.protobuf.Any`` in
``MasterArbitrationUpdate.role.config`` and leaves the scheme to client and
server.  The one public scheme is Stratum's ``stratum.P4RoleConfig`` (finsy
ships it and sends it whenever a role name is given), so that is the scheme
understood here, with Stratum's rules:

- a config for the default role (no name) is INVALID_ARGUMENT "Cannot set a
  role config for the default role."; a config of another type is
  INVALID_ARGUMENT "Unknown role config format.";
- a role's ``exclusive_p4_ids`` may not be claimed (exclusively or shared) by
  another role's config: INVALID_ARGUMENT;
- a Write update on an entity whose P4 id (table, action profile, counter,
  meter, register, value set, digest; the table's for direct resources) is in
  neither ``exclusive_p4_ids`` nor ``shared_p4_ids`` is PERMISSION_DENIED, and
  so are replication-engine entries, which have no P4 id;
- SetForwardingPipelineConfig needs ``can_push_pipeline``;
- PacketIns go to the role's primary only with ``receives_packet_ins``, and
  only those whose metadata ``packet_in_filter.metadata_id`` equals
  ``packet_in_filter.value`` (canonical bytes) when a filter is set;
- DigestLists and idle-timeout notifications go only to roles whose config
  lists the digest or the table.

A role without a config (including the default role) has full pipeline access,
as the specification says.  Reads are never restricted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from finsy.proto import p4r, stratum
from google.protobuf import any_pb2

from softswitch.errors import RuntimeConfigError
from softswitch.switch.p4rt.codec import encode_bits


@dataclass(frozen=True, slots=True)
class RoleConfig:
    """One role's access, decoded from a ``stratum.P4RoleConfig``."""

    exclusive: frozenset[int]
    shared: frozenset[int]
    receives_packet_ins: bool
    packet_in_filter: tuple[int, bytes] | None
    can_push_pipeline: bool
    message: any_pb2.Any

    @property
    def writable(self) -> frozenset[int]:
        return self.exclusive | self.shared


def parse_role_config(role: p4r.Role) -> RoleConfig | None:
    """The config a MasterArbitrationUpdate carries, or None when it carries none."""
    if not role.HasField("config"):
        return None
    if not role.name:
        raise RuntimeConfigError(
            "INVALID_ARGUMENT", "Cannot set a role config for the default role."
        )
    config = stratum.P4RoleConfig()
    if not role.config.Unpack(config):
        raise RuntimeConfigError("INVALID_ARGUMENT", "Unknown role config format.")
    packet_filter = None
    if config.HasField("packet_in_filter"):
        value = int.from_bytes(config.packet_in_filter.value, "big")
        packet_filter = (config.packet_in_filter.metadata_id, encode_bits(value))
    message = any_pb2.Any()
    message.CopyFrom(role.config)
    return RoleConfig(
        exclusive=frozenset(config.exclusive_p4_ids),
        shared=frozenset(config.shared_p4_ids),
        receives_packet_ins=config.receives_packet_ins,
        packet_in_filter=packet_filter,
        can_push_pipeline=config.can_push_pipeline,
        message=message,
    )


def check_compatible(role: str, config: RoleConfig, others: dict[str, RoleConfig]) -> None:
    """INVALID_ARGUMENT if ``config`` claims exclusively what another role's config names."""
    for other_role, other in others.items():
        if other_role == role:
            continue
        clash = config.exclusive & other.writable or other.exclusive & config.writable
        if clash:
            raise RuntimeConfigError(
                "INVALID_ARGUMENT",
                f"role {role!r}: P4 id(s) {', '.join(hex(i) for i in sorted(clash))} "
                f"are already claimed exclusively by role {other_role!r}",
            )


# Where each kind of entity names the P4 object it acts on: a field path from the entity.
_P4_ID_FIELD: dict[str, tuple[str, ...]] = {
    "table_entry": ("table_id",),
    "action_profile_member": ("action_profile_id",),
    "action_profile_group": ("action_profile_id",),
    "meter_entry": ("meter_id",),
    "direct_meter_entry": ("table_entry", "table_id"),
    "counter_entry": ("counter_id",),
    "direct_counter_entry": ("table_entry", "table_id"),
    "value_set_entry": ("value_set_id",),
    "register_entry": ("register_id",),
    "digest_entry": ("digest_id",),
}


def entity_p4_id(entity: p4r.Entity) -> int | None:
    """The P4 id a Write update on ``entity`` acts on (None for PRE and extern entries)."""
    kind = entity.WhichOneof("entity")
    if kind is None or kind not in _P4_ID_FIELD:
        return None
    value: Any = getattr(entity, kind)
    for name in _P4_ID_FIELD[kind]:
        value = getattr(value, name)
    return int(value)


def check_write(role: str, config: RoleConfig | None, update: p4r.Update) -> None:
    """PERMISSION_DENIED unless the role may write the update's entity."""
    if config is None:
        return
    ident = entity_p4_id(update.entity)
    if ident is None or ident not in config.writable:
        what = "this entity" if ident is None else f"P4 id {ident:#x}"
        raise RuntimeConfigError("PERMISSION_DENIED", f"role {role!r} may not write {what}")


def check_push_pipeline(role: str, config: RoleConfig | None) -> None:
    if config is not None and not config.can_push_pipeline:
        raise RuntimeConfigError(
            "PERMISSION_DENIED", f"role {role!r} may not set the forwarding pipeline"
        )


def wants_packet_in(config: RoleConfig | None, packet: p4r.PacketIn) -> bool:
    """Whether a role's primary is sent this PacketIn."""
    if config is None:
        return True
    if not config.receives_packet_ins:
        return False
    if config.packet_in_filter is None:
        return True
    metadata_id, value = config.packet_in_filter
    return any(md.metadata_id == metadata_id and md.value == value for md in packet.metadata)


def wants_notification(p4_id: int, config: RoleConfig | None) -> bool:
    """Whether a role's primary is sent a DigestList or idle timeout of ``p4_id``."""
    return config is None or p4_id in config.writable
