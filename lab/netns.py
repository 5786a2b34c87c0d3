"""Sockets inside a host's network namespace, created from the lab's own process.

A Mininet host is a shell in its own network namespace; the controller's API
listens on the root namespace's 127.0.0.1, which no host can reach. Rather than
run a sender process per host and relay its questions to the controller, the
experiment keeps every KV sender and receiver in its own asyncio loop and creates
each socket *inside* the host's namespace: the thread enters the namespace
(``setns(2)`` on ``/proc/PID/ns/net``), creates the socket, and returns to its own
namespace at once. A socket stays in the namespace it was created in for its whole
life, so the loop can then drive sockets of many hosts, and talk to the controller,
side by side.

``setns`` changes only the calling thread's namespace, and :func:`inside` always
switches back, even on an error. Python 3.11 has no ``os.setns``; libc's is called
through ctypes.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import socket
from collections.abc import Callable, Iterator

from experiment.errors import FabricError

CLONE_NEWNET = 0x40000000

SocketFactory = Callable[[], socket.socket]
"""Makes a new TCP socket where the caller's traffic must originate."""

_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


@contextlib.contextmanager
def inside(netns_path: str) -> Iterator[None]:
    """Run the block with this thread in the network namespace at ``netns_path``."""
    try:
        own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    except OSError as exc:
        raise FabricError(f"cannot open this thread's network namespace: {exc}") from None
    try:
        try:
            target = os.open(netns_path, os.O_RDONLY)
        except OSError as exc:
            raise FabricError(f"cannot open network namespace {netns_path}: {exc}") from None
        try:
            try:
                _setns(target)
            except OSError as exc:
                hint = " (needs root)" if exc.errno == errno.EPERM else ""
                raise FabricError(f"cannot enter {netns_path}: {exc.strerror}{hint}") from None
            try:
                yield
            finally:
                _setns(own)
        finally:
            os.close(target)
    finally:
        os.close(own)


def socket_in(netns_path: str, kind: int = socket.SOCK_STREAM) -> socket.socket:
    """A new IPv4 socket that lives in the namespace at ``netns_path``."""
    with inside(netns_path):
        return socket.socket(socket.AF_INET, kind)


def factory_in(netns_path: str) -> SocketFactory:
    """A :data:`SocketFactory` for TCP sockets in the namespace at ``netns_path``."""
    return lambda: socket_in(netns_path)


def plain_factory() -> socket.socket:
    """A TCP socket in this thread's own namespace (tests, real hosts)."""
    return socket.socket(socket.AF_INET, socket.SOCK_STREAM)
