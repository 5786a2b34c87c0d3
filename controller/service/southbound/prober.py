"""The topology audit's I/O: link probes out of every switch port, PacketIns back.

Every audit round, the primary sends one probe (``p4/README.md``, "Link discovery")
out of each switch port the model wires to another switch, all with the round's
nonce; the neighbour punts each probe to its controller with the port it arrived on.
After a collection window the round is handed to the engine as an
:class:`~controller.engine.AuditRound`: the ports probed, and where each probe was
seen. A probe from a port whose switch is not connected is not sent, so its
direction gets no verdict; the probes *towards* a dead switch are sent and never
seen, which marks its cables down.

Probes are trusted only as far as a host cannot forge them. Each round's nonce is
32 random bits from :mod:`secrets` (a host that never sees a probe guesses one of
the ``LATE_ROUNDS`` accepted nonces with odds of 5 in 2**32 per frame), and a
probe punted from a port the model gives a host is dropped whatever it says: no
link-discovery frame legitimately arrives from a host, and a cable plugged into a
host port shows as its direction down (its probes are seen nowhere else). Frames
that arrive at ports the model does not know still count: that is how a cable the
model lacks is found. Rejected probes are counted by reason
(:class:`Verdict`).

A probe may come back after its round's window closed (a busy switch punts it late):
it still proves the link works, so a probe of any of the last ``LATE_ROUNDS`` rounds
counts in the round being collected. The prober does not debounce: every round goes
to the engine as seen, and :mod:`controller.engine.liveness` decides when a missing
probe is a dead link (hold time, allowed misses, counter evidence).
"""

from __future__ import annotations

import asyncio
import secrets
import struct
import time
from collections import deque
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from controller.engine import AuditRound, ProbeSeen
from controller.errors import SwitchError
from controller.service.southbound.intent import switch_mac
from controller.service.southbound.switches import SwitchLink
from controller.topology import PortRef, Topology

ETHERTYPE = 0x88B5
MAGIC = 0x4B564650
VERSION = 1
DST_MAC = bytes.fromhex("0180c200000e")
_HEADER = struct.Struct("!IBBHQI")  # magic, version, flags, sender port, device id, nonce
MIN_FRAME = 60
LATE_ROUNDS = 5
"""A probe of one of the last this many rounds still proves its link works."""


def probe_frame(src_mac: int, device_id: int, port: int, nonce: int) -> bytes:
    """The probe sent out of ``port`` of switch ``device_id``, padded to 60 bytes."""
    eth = DST_MAC + src_mac.to_bytes(6, "big") + ETHERTYPE.to_bytes(2, "big")
    frame = eth + _HEADER.pack(MAGIC, VERSION, 0, port, device_id, nonce & 0xFFFFFFFF)
    return frame.ljust(MIN_FRAME, b"\0")


@dataclass(frozen=True, slots=True)
class Probe:
    """What a received probe says: who sent it, from which port, in which round."""

    device_id: int
    port: int
    nonce: int


def parse_probe(frame: bytes) -> Probe | None:
    """The probe in ``frame``, or None if it is not a kvfabric probe."""
    if len(frame) < 14 + _HEADER.size or frame[12:14] != ETHERTYPE.to_bytes(2, "big"):
        return None
    magic, version, _flags, port, device, nonce = _HEADER.unpack_from(frame, 14)
    if magic != MAGIC or version != VERSION:
        return None
    return Probe(device, port, nonce)


class Verdict(StrEnum):
    """What the prober made of a PacketIn."""

    SEEN = "seen"
    """A probe of a recent round, counted in the round being collected."""
    NOT_PROBE = "not a probe"
    FROM_HOST_PORT = "host port"
    """A probe punted from a port the model gives a host: forged, dropped."""
    UNKNOWN_NONCE = "unknown nonce"
    """Not a nonce of the last ``LATE_ROUNDS`` rounds (or no round yet): dropped."""
    UNKNOWN_SENDER = "unknown sender"
    """A device id no switch of the model has: dropped."""


@dataclass(slots=True)
class _Round:
    sent: list[PortRef] = field(default_factory=list)
    seen: list[ProbeSeen] = field(default_factory=list)


class Prober:
    """Sends probe rounds and collects what comes back (see the module docstring)."""

    def __init__(
        self, topology: Topology, window_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.window_s = window_s
        self.clock = clock
        self.targets: dict[str, tuple[int, ...]] = {}
        for port in topology.egress.values():
            if port.link is not None:
                ports = self.targets.get(port.ref.switch, ())
                self.targets[port.ref.switch] = (*ports, port.ref.port)
        self.peer_of = {
            p.ref: p.peer_port.switch for p in topology.egress.values() if p.peer_port is not None
        }
        self.host_ports = frozenset(
            p.ref for p in topology.egress.values() if p.link is None and p.peer in topology.hosts
        )
        cfg = topology.config
        self.device_of = {s.name: s.device_id for s in cfg.switches}
        self.switch_of = {s.device_id: s.name for s in cfg.switches}
        self.nonce = 0
        self._current: _Round | None = None
        self._recent: deque[int] = deque(maxlen=LATE_ROUNDS)
        self._sent_at: dict[int, float] = {}
        self.received = 0
        self.late = 0
        self.rejected: dict[Verdict, int] = {}
        self.last_delay_s: float | None = None

    def on_packet(self, at_switch: str, payload: bytes, ingress_port: int) -> Verdict:
        """A PacketIn from ``at_switch``: ``SEEN`` if it was a probe of a recent round.

        ``last_delay_s`` is then that probe's round trip (PacketOut to PacketIn).
        Rejected probes are counted in ``rejected``.
        """
        probe = parse_probe(payload)
        if probe is None:
            return Verdict.NOT_PROBE
        current = self._current
        sender = self.switch_of.get(probe.device_id)
        if PortRef(at_switch, ingress_port) in self.host_ports:
            return self._reject(Verdict.FROM_HOST_PORT)
        if current is None or probe.nonce not in self._recent:
            return self._reject(Verdict.UNKNOWN_NONCE)
        if sender is None:
            return self._reject(Verdict.UNKNOWN_SENDER)
        self.received += 1
        if probe.nonce != self.nonce:
            self.late += 1
        sent_at = self._sent_at.get(probe.nonce)
        self.last_delay_s = self.clock() - sent_at if sent_at is not None else None
        current.seen.append(
            ProbeSeen(PortRef(sender, probe.port), PortRef(at_switch, ingress_port))
        )
        return Verdict.SEEN

    def _reject(self, verdict: Verdict) -> Verdict:
        self.rejected[verdict] = self.rejected.get(verdict, 0) + 1
        return verdict

    def _new_nonce(self) -> int:
        """32 random bits, none of the recent rounds' (an old nonce would accept replays)."""
        while True:
            nonce = secrets.randbits(32)
            if nonce not in self._recent:
                return nonce

    async def round(
        self, links: Mapping[str, SwitchLink], provisioned: Collection[str]
    ) -> tuple[AuditRound, list[str]]:
        """Send one round, wait the window, return it and the send errors.

        Probes leave only switches in ``provisioned``, and only towards neighbours
        that are provisioned too or not connected at all (a dead switch's cables must
        be judged); a neighbour still being provisioned gets no probe, since without
        its pipeline it could not punt it and the cable would look dead.
        """
        self.nonce = nonce = self._new_nonce()
        late = self._current.seen if self._current is not None else []
        state = self._current = _Round(seen=late)
        if len(self._recent) == self._recent.maxlen:
            self._sent_at.pop(self._recent[0], None)
        self._recent.append(nonce)
        self._sent_at[nonce] = self.clock()
        errors: list[str] = []
        sends = []
        for name, link in links.items():
            if not link.primary or name not in provisioned:
                continue
            device = self.device_of[name]
            mac = switch_mac(device)
            for port in self.targets.get(name, ()):
                peer = links.get(self.peer_of[PortRef(name, port)])
                if peer is not None and peer.up and peer.name not in provisioned:
                    continue
                sends.append(self._send(link, probe_frame(mac, device, port, nonce), port, state))
        for result in await asyncio.gather(*sends, return_exceptions=True):
            if isinstance(result, SwitchError):
                errors.append(str(result))
            elif isinstance(result, BaseException):
                raise result
        await asyncio.sleep(self.window_s)
        self._current = _Round()  # late probes of this round count in the next one
        return AuditRound(tuple(state.sent), tuple(state.seen)), errors

    async def _send(self, link: SwitchLink, frame: bytes, port: int, state: _Round) -> None:
        await link.packet_out(frame, port)
        state.sent.append(PortRef(link.name, port))
