"""Checksum and segmentation offloads of the interfaces the switch attaches to.

A packet socket on an interface with offloads sees frames the wire never
carries: TCP/UDP segments with a partial checksum (tx checksum offload on the
sending veth), 64 KiB super-frames (TSO/GSO/GRO/LRO), VLAN tags moved out of
the frame (rx/tx VLAN offload).  The switch must see and send real frames, so it
turns these off at start (``--offloads disable``), or refuses to start
(``--offloads refuse``), or leaves them alone (``--offloads keep``).

This speaks the kernel's ethtool ioctl (``SIOCETHTOOL``) directly with the
legacy per-feature commands, so it needs neither the ``ethtool`` binary nor a
netlink library.  Each feature is one ``struct ethtool_value {u32 cmd; u32 data}``
get/set pair; VLAN offloads and LRO are bits of ``ETHTOOL_GFLAGS``.
"""

from __future__ import annotations

import array
import errno
import fcntl
import socket
import struct
from collections.abc import Iterable
from dataclasses import dataclass

from softswitch.errors import SoftswitchError

SIOCETHTOOL = 0x8946


class OffloadError(SoftswitchError):
    """An interface has offloads that the switch cannot accept or turn off."""


@dataclass(frozen=True, slots=True)
class _Feature:
    name: str
    get_cmd: int
    set_cmd: int
    flag: int = 0  # for ETHTOOL_GFLAGS/SFLAGS features: the bit; 0 for plain ones


ETHTOOL_GFLAGS, ETHTOOL_SFLAGS = 0x25, 0x26

FEATURES: tuple[_Feature, ...] = (
    _Feature("rx-checksumming", 0x14, 0x15),
    _Feature("tx-checksumming", 0x16, 0x17),
    _Feature("scatter-gather", 0x18, 0x19),
    _Feature("tcp-segmentation-offload", 0x1E, 0x1F),
    _Feature("generic-segmentation-offload", 0x23, 0x24),
    _Feature("generic-receive-offload", 0x2B, 0x2C),
    _Feature("large-receive-offload", ETHTOOL_GFLAGS, ETHTOOL_SFLAGS, 1 << 15),
    _Feature("rx-vlan-offload", ETHTOOL_GFLAGS, ETHTOOL_SFLAGS, 1 << 8),
    _Feature("tx-vlan-offload", ETHTOOL_GFLAGS, ETHTOOL_SFLAGS, 1 << 7),
)


def _ethtool(sock: socket.socket, iface: str, cmd: int, data: int = 0) -> int:
    buf = array.array("I", [cmd, data])
    addr, _ = buf.buffer_info()
    ifreq = struct.pack("16sP", iface.encode(), addr)
    fcntl.ioctl(sock.fileno(), SIOCETHTOOL, ifreq)
    return int(buf[1])


def _get(sock: socket.socket, iface: str, feature: _Feature) -> bool | None:
    try:
        value = _ethtool(sock, iface, feature.get_cmd)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EINVAL):
            return None
        if exc.errno == errno.ENODEV:
            raise OffloadError(f"{iface}: no such network interface") from None
        raise OffloadError(f"{iface}: cannot read {feature.name}: {exc.strerror}") from None
    return bool(value & feature.flag) if feature.flag else bool(value)


def read_offloads(iface: str) -> dict[str, bool]:
    """The offloads the driver reports for ``iface``: name -> enabled."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        result = {}
        for feature in FEATURES:
            state = _get(sock, iface, feature)
            if state is not None:
                result[feature.name] = state
        return result


def disable_offloads(iface: str) -> list[str]:
    """Turn every offload of ``iface`` off; return the names that were on.

    Raises :class:`OffloadError` naming the features that stay on.
    """
    changed: list[str] = []
    stuck: list[str] = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for feature in FEATURES:
            if not _get(sock, iface, feature):
                continue
            try:
                if feature.flag:
                    flags = _ethtool(sock, iface, feature.get_cmd)
                    _ethtool(sock, iface, feature.set_cmd, flags & ~feature.flag)
                else:
                    _ethtool(sock, iface, feature.set_cmd, 0)
            except OSError:
                pass
            if _get(sock, iface, feature):
                stuck.append(feature.name)
            else:
                changed.append(feature.name)
    if stuck:
        raise OffloadError(
            f"{iface}: cannot turn off {', '.join(stuck)}; "
            f"try `ethtool -K {iface} rx off tx off sg off tso off gso off gro off`"
        )
    return changed


def prepare_interfaces(ifaces: Iterable[str], mode: str) -> dict[str, list[str]]:
    """Apply ``--offloads MODE`` to each interface; return what was turned off per interface."""
    done: dict[str, list[str]] = {}
    for iface in ifaces:
        if mode == "keep":
            continue
        if mode == "refuse":
            active = [name for name, on in read_offloads(iface).items() if on]
            if active:
                raise OffloadError(
                    f"{iface}: offloads are on ({', '.join(active)}); turn them off or "
                    "start with --offloads disable"
                )
            continue
        done[iface] = disable_offloads(iface)
    return done
