"""The switch's ports as a network device reports them: speed and operational status.

BMv2 knows no port speed: its ``show_ports`` gives a port's number, interface and
whether it is up, and nothing a controller could read a capacity from. Stratum
reports both through gNMI in OpenConfig's terms (``/interfaces/interface[name=N]/
state/oper-status``, ``.../ethernet/state/port-speed``), which is what ONOS and finsy
read; this switch does the same (:mod:`softswitch.switch.gnmi`), from this model:

- a port's *speed* is the one its ``--port-speed`` option, a gNMI ``Set`` or the control
  channel's ``set_port_speed`` gives it, else what the kernel says of the interface
  (``/sys/class/net/IF/speed``, in Mb/s: a veth says 10000 while up and nothing while
  down, an unknown speed). It is the speed the port is provisioned at, as on a switch
  whose port is configured at 400G; the rate a lab link really runs at is its shaping
  (``tc``), and the lab declares the same figure with ``--port-speed``;
- its *oper-status* is the interface's RFC 2863 operational state (``operstate``: UP,
  DOWN, LOWER_LAYER_DOWN when the far end of a veth is down...), an ``unknown`` state
  being read through the carrier; an interface that is gone is NOT_PRESENT. Its
  *admin-status* is the interface's IFF_UP flag.

Speeds are OpenConfig's identities where the rate is one (``SPEED_100GB``) and
``SPEED_UNKNOWN`` otherwise; the exact rate in bit/s goes with them (gNMI's
``port-speed-bps``), since the lab's links run at rates (20 Mb/s) no Ethernet speed names.

Nothing is cached: every read goes to sysfs, so no value read is stale.
:class:`LinkWatcher` listens to the kernel's link notifications (netlink, the
RTMGRP_LINK group) on the switch's loop, and :class:`Interfaces` calls its listeners
(the gNMI subscriptions) when one of its interfaces changed, or a speed was set.
"""

from __future__ import annotations

import asyncio
import errno
import re
import socket
import struct
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from pathlib import Path

from softswitch.errors import SoftswitchError

SYSFS = Path("/sys/class/net")

SPEEDS: dict[str, int] = {
    "SPEED_10MB": 10**7,
    "SPEED_100MB": 10**8,
    "SPEED_1GB": 10**9,
    "SPEED_2500MB": 25 * 10**8,
    "SPEED_5GB": 5 * 10**9,
    "SPEED_10GB": 10**10,
    "SPEED_25GB": 25 * 10**9,
    "SPEED_40GB": 40 * 10**9,
    "SPEED_50GB": 50 * 10**9,
    "SPEED_100GB": 100 * 10**9,
    "SPEED_200GB": 200 * 10**9,
    "SPEED_400GB": 400 * 10**9,
    "SPEED_600GB": 600 * 10**9,
    "SPEED_800GB": 800 * 10**9,
}
"""OpenConfig's Ethernet speed identities (``openconfig-if-ethernet``), in bit/s."""
SPEED_UNKNOWN = "SPEED_UNKNOWN"
ETHERNET_MODULE = "openconfig-if-ethernet"
_NAMES = {bps: name for name, bps in SPEEDS.items()}
_PREFIX = {"": 1, "k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
_RATE = re.compile(r"^(?P<num>\d+(?:\.\d+)?)(?P<prefix>[kKMGT]?)(?:bps|bit/s|b/s|b)?$")


class SpeedError(SoftswitchError):
    """A port speed that does not parse, or names no OpenConfig speed."""


def parse_rate(text: str) -> int:
    """Bit/s of ``'400G'``, ``'400Gbps'``, ``'20Mbps'``, ``'2.5G'`` or ``'25000000'``; an
    OpenConfig speed name (``SPEED_100GB``) works too."""
    text = text.strip()
    if text.upper().startswith("SPEED_") or text.startswith(f"{ETHERNET_MODULE}:"):
        named = speed_of(text)
        if named is None:
            raise SpeedError(f"{text}: an unknown speed cannot be provisioned")
        return named
    m = _RATE.match(text)
    if m is None:
        raise SpeedError(f"expected a rate such as 400G, 20Mbps or SPEED_100GB, got {text!r}")
    bps = Decimal(m.group("num")) * _PREFIX[m.group("prefix")]
    if bps <= 0 or bps != bps.to_integral_value():
        raise SpeedError(f"a port speed is a positive whole number of bit/s, got {text!r}")
    return int(bps)


def speed_name(bps: int | None) -> str:
    """OpenConfig's identity of ``bps`` (``SPEED_100GB``), ``SPEED_UNKNOWN`` for none."""
    return _NAMES.get(bps, SPEED_UNKNOWN) if bps is not None else SPEED_UNKNOWN


def speed_of(name: str) -> int | None:
    """Bit/s of an OpenConfig speed identity, with or without its module's prefix; None
    for ``SPEED_UNKNOWN``."""
    bare = name.rpartition(":")[2].strip()
    if bare == SPEED_UNKNOWN:
        return None
    try:
        return SPEEDS[bare]
    except KeyError:
        known = ", ".join(SPEEDS)
        raise SpeedError(f"{name!r} is no OpenConfig port speed (one of {known})") from None


class OperStatus(StrEnum):
    """OpenConfig's ``oper-status`` of an interface (RFC 2863's ifOperStatus)."""

    UP = "UP"
    DOWN = "DOWN"
    TESTING = "TESTING"
    UNKNOWN = "UNKNOWN"
    DORMANT = "DORMANT"
    NOT_PRESENT = "NOT_PRESENT"
    LOWER_LAYER_DOWN = "LOWER_LAYER_DOWN"


_OPERSTATE = {
    "up": OperStatus.UP,
    "down": OperStatus.DOWN,
    "lowerlayerdown": OperStatus.LOWER_LAYER_DOWN,
    "dormant": OperStatus.DORMANT,
    "testing": OperStatus.TESTING,
    "notpresent": OperStatus.NOT_PRESENT,
}
_IFF_UP = 0x1


@dataclass(frozen=True, slots=True)
class PortView:
    """One port now: its number, its interface, its speed (None: unknown) and whether
    that speed was provisioned (an option, a Set) rather than read from the kernel."""

    number: int
    name: str
    speed_bps: int | None
    provisioned: bool
    oper_status: OperStatus
    admin_up: bool


class Interfaces:
    """The switch's ports (``-i PORT@IFACE``), their speeds and statuses (see the module
    docstring). ``speeds`` are the command line's, by port; ``sysfs`` is the kernel's
    ``/sys/class/net`` (a test gives a directory of its own)."""

    def __init__(
        self,
        ports: Sequence[tuple[int, str]],
        speeds: Mapping[int, int] | None = None,
        *,
        sysfs: Path = SYSFS,
    ) -> None:
        self.names: dict[int, str] = dict(sorted(ports))
        self.numbers: dict[str, int] = {name: number for number, name in self.names.items()}
        self.sysfs = sysfs
        self._given = dict(speeds or {})
        self._speeds = dict(self._given)
        self.listeners: list[Callable[[], None]] = []

    def __iter__(self) -> Iterator[int]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def number_of(self, name: str) -> int:
        """The port of interface ``name``; a :class:`KeyError` names the interfaces."""
        try:
            return self.numbers[name]
        except KeyError:
            raise KeyError(f"no interface {name!r} (ports: {', '.join(self.numbers)})") from None

    def view(self, number: int) -> PortView:
        """Port ``number`` as the kernel and the provisioned speeds say now."""
        name = self.names[number]
        provisioned = self._speeds.get(number)
        speed = provisioned if provisioned is not None else self._kernel_speed(name)
        return PortView(
            number, name, speed, provisioned is not None, self._oper(name), self._admin_up(name)
        )

    def views(self) -> list[PortView]:
        """Every port, by number."""
        return [self.view(n) for n in self.names]

    def set_speed(self, number: int, bps: int | None) -> None:
        """Provision port ``number`` at ``bps`` (None: back to the command line's speed, or
        the kernel's without one) and tell the listeners."""
        if number not in self.names:
            raise SpeedError(f"no port {number} (ports: {', '.join(map(str, self.names))})")
        if bps is not None and bps <= 0:
            raise SpeedError(f"a port speed must be positive, got {bps}")
        if bps is None:
            given = self._given.get(number)
            self._speeds.pop(number, None)
            if given is not None:
                self._speeds[number] = given
        else:
            self._speeds[number] = bps
        self.changed()

    def changed(self) -> None:
        """Tell every listener that a port may have changed."""
        for listener in list(self.listeners):
            listener()

    # -- sysfs ------------------------------------------------------------------------

    def _read(self, name: str, attribute: str) -> str | None:
        try:
            return (self.sysfs / name / attribute).read_text().strip()
        except OSError:  # gone, or not readable now (a veth's speed while it is down)
            return None

    def _kernel_speed(self, name: str) -> int | None:
        text = self._read(name, "speed")
        try:
            mbps = int(text) if text is not None else -1
        except ValueError:
            return None
        return mbps * 10**6 if mbps > 0 else None

    def _oper(self, name: str) -> OperStatus:
        state = self._read(name, "operstate")
        if state is None:
            return OperStatus.NOT_PRESENT
        known = _OPERSTATE.get(state)
        if known is not None:
            return known
        return OperStatus.UP if self._read(name, "carrier") == "1" else OperStatus.DOWN

    def _admin_up(self, name: str) -> bool:
        flags = self._read(name, "flags")
        try:
            return flags is not None and bool(int(flags, 16) & _IFF_UP)
        except ValueError:
            return False


# -- the kernel's link notifications ---------------------------------------------------

_RTMGRP_LINK = 0x1
_RTM_NEWLINK, _RTM_DELLINK = 16, 17
_IFLA_IFNAME = 3
_NLMSGHDR = struct.Struct("=IHHII")
_IFINFOMSG = struct.Struct("=BxHiII")
_RTATTR = struct.Struct("=HH")


def link_names(data: bytes) -> set[str] | None:
    """The interface names that the link messages in ``data`` (one netlink datagram)
    are about; None when one of them names none (any interface may have changed)."""
    names: set[str] = set()
    offset = 0
    while offset + _NLMSGHDR.size <= len(data):
        length, kind, _flags, _seq, _pid = _NLMSGHDR.unpack_from(data, offset)
        if length < _NLMSGHDR.size:
            break
        if kind in (_RTM_NEWLINK, _RTM_DELLINK):
            name = _ifname(data[offset + _NLMSGHDR.size : offset + length])
            if name is None:
                return None
            names.add(name)
        offset += (length + 3) & ~3
    return names


def _ifname(body: bytes) -> str | None:
    at = _IFINFOMSG.size
    while at + _RTATTR.size <= len(body):
        rta_len, rta_type = _RTATTR.unpack_from(body, at)
        if rta_len < _RTATTR.size:
            return None
        if rta_type == _IFLA_IFNAME:
            raw = body[at + _RTATTR.size : at + rta_len]
            return raw.split(b"\0", 1)[0].decode(errors="replace")
        at += (rta_len + 3) & ~3
    return None


class LinkWatcher:
    """Link notifications of the kernel (netlink, RTMGRP_LINK) watched on an asyncio loop:
    a message about one of ``interfaces``' ports, or a lost message (the socket's buffer
    overflowed), calls :meth:`Interfaces.changed`."""

    def __init__(self, interfaces: Interfaces) -> None:
        self.interfaces = interfaces
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
        try:
            sock.bind((0, _RTMGRP_LINK))
        except OSError as exc:
            sock.close()
            raise SoftswitchError(f"cannot watch link changes (netlink): {exc.strerror}") from None
        sock.setblocking(False)
        self.sock = sock
        self._loop: asyncio.AbstractEventLoop | None = None

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Watch on ``loop``."""
        self._loop = loop
        loop.add_reader(self.sock.fileno(), self._readable)

    def _readable(self) -> None:
        ours = self.interfaces.numbers
        touched = False
        while True:
            try:
                data = self.sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as exc:
                if exc.errno != errno.ENOBUFS:
                    raise
                touched = True  # messages were lost: any port may have changed
                continue
            names = link_names(data)
            touched = touched or names is None or any(n in ours for n in names)
        if touched:
            self.interfaces.changed()

    def close(self) -> None:
        """Stop watching and close the socket."""
        if self._loop is not None:
            self._loop.remove_reader(self.sock.fileno())
            self._loop = None
        self.sock.close()
