"""Client arbitration: election ids, roles, the primary and its backups.

A pure state machine in the style of faucet's handlers: each method takes an
event and *returns* the ``(stream_id, StreamMessageResponse)`` notifications to
send, so it is tested without a server.

Rules (P4Runtime spec, "Client Arbitration and Controller Replication"):

- Per role, the server remembers the highest election id it has ever received.
  The client whose election id equals that highest id is the primary; when that
  client leaves there is no primary until a client bids at least that id.
- The primary is told ``OK``; backups ``ALREADY_EXISTS`` when a primary exists
  and ``NOT_FOUND`` when none does.  The election id in every notification is
  the highest seen for the role.
- A new client that changes who is primary makes every client of the role be
  notified; otherwise only the new client is.  A primary leaving notifies all.
- Two live clients of one role may not share an election id (INVALID_ARGUMENT
  "Election id already exists", the wording BMv2 uses and clients look for).
- A stream may not change device or role (FAILED_PRECONDITION); a device id
  that is not ours is NOT_FOUND.

Write and SetForwardingPipelineConfig are allowed to the primary of their role.
Like BMv2, a request without election id is accepted while no client at all is
connected, which keeps ``grpc_cli``-style debugging possible.

A role's configuration (:mod:`softswitch.switch.p4rt.roles`) is taken from its
primary: a client that is or becomes primary sets it with ``role.config``, or
clears it (full access) by sending none.  Notifications carry the role's name
and current config.
"""

from __future__ import annotations

from dataclasses import dataclass

from finsy.proto import U128, p4r, rpc_code, rpc_status

from softswitch.errors import RuntimeConfigError
from softswitch.switch.p4rt.roles import RoleConfig, check_compatible, parse_role_config

Notification = tuple[int, p4r.StreamMessageResponse]
MAX_CLIENTS = 16


@dataclass(slots=True)
class Client:
    stream_id: int
    role: str
    election_id: int


class Arbiter:
    """The arbitration state of one device."""

    def __init__(self, device_id: int) -> None:
        self.device_id = device_id
        self.clients: dict[int, Client] = {}
        self.highest: dict[str, int] = {}
        self.role_configs: dict[str, RoleConfig] = {}

    # --- queries ------------------------------------------------------------------------

    def primary(self, role: str) -> Client | None:
        highest = self.highest.get(role)
        for client in self.clients.values():
            if client.role == role and client.election_id == highest:
                return client
        return None

    def is_primary_stream(self, stream_id: int) -> bool:
        client = self.clients.get(stream_id)
        return client is not None and self.primary(client.role) is client

    def primary_streams(self) -> list[int]:
        """The stream of each role's primary: where packet-ins and notifications go."""
        return [stream_id for _, stream_id in self.primaries()]

    def primaries(self) -> list[tuple[str, int]]:
        """``(role, stream id)`` of each role's primary."""
        roles = {c.role for c in self.clients.values()}
        found = [(role, self.primary(role)) for role in sorted(roles)]
        return [(role, p.stream_id) for role, p in found if p is not None]

    def config_of(self, role: str) -> RoleConfig | None:
        """The role's configuration; None means full pipeline access."""
        return self.role_configs.get(role)

    def check_primary(self, role: str, election_id: int | None) -> None:
        """Raise PERMISSION_DENIED unless ``election_id`` is the primary's of ``role``."""
        if not self.clients and election_id is None:
            return
        primary = self.primary(role)
        if primary is None or election_id != primary.election_id:
            raise RuntimeConfigError("PERMISSION_DENIED", "Not primary")

    # --- events -------------------------------------------------------------------------

    def arbitrate(self, stream_id: int, update: p4r.MasterArbitrationUpdate) -> list[Notification]:
        """A MasterArbitrationUpdate arrived on ``stream_id``."""
        if update.device_id != self.device_id:
            raise RuntimeConfigError("NOT_FOUND", f"Invalid device id {update.device_id}")
        role = update.role.name
        config = parse_role_config(update.role)
        if config is not None:
            check_compatible(role, config, self.role_configs)
        election_id = U128.decode(update.election_id)
        client = self.clients.get(stream_id)
        if client is not None and client.role != role:
            raise RuntimeConfigError("FAILED_PRECONDITION", "a stream cannot change its role")
        for other in self.clients.values():
            same_role = other.stream_id != stream_id and other.role == role
            if same_role and other.election_id == election_id:
                raise RuntimeConfigError("INVALID_ARGUMENT", "Election id already exists")
        if client is None and len(self.clients) >= MAX_CLIENTS:
            raise RuntimeConfigError("RESOURCE_EXHAUSTED", "Too many connections")
        before = self.primary(role)
        if client is None:
            client = Client(stream_id, role, election_id)
            self.clients[stream_id] = client
        else:
            client.election_id = election_id
        self.highest[role] = max(self.highest.get(role, 0), election_id)
        after = self.primary(role)
        if after is client and config is not None:
            self.role_configs[role] = config
        elif after is client:
            self.role_configs.pop(role, None)
        if before is not after:
            return self._notify_role(role)
        return [self._notification(client)]

    def remove(self, stream_id: int) -> list[Notification]:
        """The stream closed."""
        client = self.clients.pop(stream_id, None)
        if client is None:
            return []
        if self.primary(client.role) is None and client.election_id == self.highest[client.role]:
            return self._notify_role(client.role)
        return []

    # --- notifications ------------------------------------------------------------------

    def _notify_role(self, role: str) -> list[Notification]:
        return [self._notification(c) for c in self.clients.values() if c.role == role]

    def _notification(self, client: Client) -> Notification:
        primary = self.primary(client.role)
        if primary is client:
            status = rpc_status.Status(code=rpc_code.OK, message="Is primary")
        elif primary is not None:
            status = rpc_status.Status(code=rpc_code.ALREADY_EXISTS, message="Is backup")
        else:
            status = rpc_status.Status(code=rpc_code.NOT_FOUND, message="No primary")
        update = p4r.MasterArbitrationUpdate(
            device_id=self.device_id,
            election_id=U128.encode(self.highest.get(client.role, 0)),
            status=status,
        )
        if client.role:
            update.role.name = client.role
        config = self.role_configs.get(client.role)
        if config is not None:
            update.role.config.CopyFrom(config.message)
        return client.stream_id, p4r.StreamMessageResponse(arbitration=update)
