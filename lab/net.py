"""The running lab: Mininet built from a :class:`~lab.topo.FabricTopo`, and its teardown.

:class:`Lab` injects the node and link classes (``P4Switch``, ``LabHost`` and
``ShapedLink`` by default; the VM lab passes ``Bmv2Switch``), starts every switch
process in parallel, and keeps a :class:`~lab.procs.ProcessTable` of what it starts
inside hosts (iperf3, helpers). It is a context manager: leaving the ``with`` block
normally, by an exception or by Ctrl-C stops host processes, then switch processes,
then Mininet's shells and links, in that order (a switch never outlives its
interfaces by more than its shutdown).

What a lab creates is recorded as a :class:`Footprint` while it runs: the pids of
every shell and process, the network namespaces of the hosts (``net:[inode]``) and
the names of the interfaces in the root namespace. After teardown,
:func:`leftovers` looks each of them up again: a pid still alive, a namespace some
process still holds, an interface still present. ``Lab.stop`` raises a
:class:`~lab.errors.FabricError` naming them, and the test suite checks the list is
empty on a normal exit and after an exception.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mininet.net import Mininet

from experiment.errors import FabricError
from lab.links import ShapedLink
from lab.nodes import LabHost, P4Switch
from lab.procs import ProcessTable, Tracked, alive
from lab.topo import FabricTopo


@dataclass(frozen=True, slots=True)
class Footprint:
    """Everything a lab created that must be gone after teardown."""

    pids: frozenset[int]
    netns: frozenset[str]
    interfaces: frozenset[str]


def _netns_of(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def _netns_in_use() -> set[str]:
    """Every network namespace some process on the machine is in."""
    seen: set[str] = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            ns = _netns_of(int(entry))
            if ns is not None:
                seen.add(ns)
    return seen


def leftovers(footprint: Footprint, wait_s: float = 5.0) -> list[str]:
    """What of ``footprint`` still exists, waiting up to ``wait_s`` for it to go."""
    deadline = time.monotonic() + wait_s
    while True:
        found = [f"process {pid}" for pid in sorted(footprint.pids) if alive(pid)]
        present = set(os.listdir("/sys/class/net"))
        found += [f"interface {i}" for i in sorted(footprint.interfaces & present)]
        found += [f"network namespace {n}" for n in sorted(footprint.netns & _netns_in_use())]
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


class Lab:
    """A running emulated fabric; use as a context manager."""

    def __init__(
        self,
        topo: FabricTopo,
        *,
        switch_cls: type[P4Switch] = P4Switch,
        host_cls: type[LabHost] = LabHost,
        link_cls: type[ShapedLink] = ShapedLink,
        switch_opts: Mapping[str, Any] | None = None,
        log_dir: Path | None = None,
    ) -> None:
        self.topo = topo
        self.log_dir = log_dir or Path("/tmp") / f"{topo.prefix}-logs"
        opts = {"log_dir": str(self.log_dir), **(switch_opts or {})}
        self.switch_cls = functools.partial(switch_cls, **opts)
        self.host_cls = host_cls
        self.link_cls = link_cls
        self.net: Any = None
        self.processes = ProcessTable()
        self._pids: set[int] = set()
        self._netns: set[str] = set()
        self.footprint: Footprint | None = None

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> Lab:
        """Build the network, start every switch and wait until each serves gRPC."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        try:
            self.net = Mininet(
                topo=None,
                switch=self.switch_cls,
                host=self.host_cls,
                link=self.link_cls,
                controller=None,
                build=False,
                autoSetMacs=False,
                waitConnected=False,
            )
            self.net.topo = self.topo
            self.net.build()
            self._record()
            self.net.start()
            self._record()
        except BaseException:
            self.stop(check=False)
            raise
        return self

    def stop(self, *, check: bool = True) -> list[str]:
        """Stop everything; with ``check``, raise if anything the lab created remains."""
        self._record()
        self.processes.stop_all()
        net, self.net = self.net, None
        if net is not None:
            for switch in net.switches:
                with contextlib.suppress(Exception):  # keep tearing down whatever fails
                    switch.stop_process()
            net.stop()
        footprint = self.current_footprint()
        self.footprint = footprint
        remaining = leftovers(footprint, wait_s=5.0 if check else 2.0)
        if remaining and check:
            raise FabricError("left behind after teardown: " + ", ".join(remaining))
        return remaining

    def current_footprint(self) -> Footprint:
        """Everything the lab has created so far."""
        self._record()
        return Footprint(
            frozenset(self._pids),
            frozenset(self._netns),
            frozenset(self.topo.switch_intfs.values()),
        )

    def __enter__(self) -> Lab:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        self.stop(check=exc_type is None)

    def _record(self) -> None:
        """Remember the pids and namespaces of every node and process so far."""
        if self.net is None:
            return
        for node in [*self.net.hosts, *self.net.switches]:
            if node.pid:
                self._pids.add(int(node.pid))
            if isinstance(node, P4Switch) and node.switch_pid is not None:
                self._pids.add(node.switch_pid)
        for host in self.net.hosts:
            ns = _netns_of(int(host.pid)) if host.pid else None
            if ns is not None and ns != _netns_of(os.getpid()):
                self._netns.add(ns)
        self._pids.update(self.processes.pids)

    # -- access --------------------------------------------------------------------------

    def host(self, name: str) -> Any:
        """The Mininet host node ``name``."""
        return self._node(name, self.net.hosts)

    def switch(self, name: str) -> P4Switch:
        """The switch node ``name``."""
        node = self._node(name, self.net.switches)
        assert isinstance(node, P4Switch)
        return node

    def _node(self, name: str, nodes: Sequence[Any]) -> Any:
        if self.net is None:
            raise FabricError("the lab is not running")
        for node in nodes:
            if node.name == name:
                return node
        raise FabricError(f"no node named {name!r} in the lab")

    @property
    def switch_pids(self) -> dict[str, int]:
        """The pid of every running switch process, by switch name."""
        if self.net is None:
            return {}
        return {s.name: s.switch_pid for s in self.net.switches if s.switch_pid is not None}

    def netns_path(self, host: str) -> str:
        """``/proc/PID/ns/net`` of a host: open it to create sockets in the host."""
        return f"/proc/{self.host(host).pid}/ns/net"

    def popen(
        self, host: str, name: str, argv: Sequence[str], log_path: Path | None = None
    ) -> Tracked:
        """Start ``argv`` inside ``host``'s namespace, tracked by pid."""
        entry = self.processes.start(name, argv, log_path=log_path, launcher=self.host(host).popen)
        self._pids.add(entry.pid)
        return entry

    def cmd(self, host: str, *args: str) -> str:
        """Run a short shell command in ``host`` and return its output."""
        return str(self.host(host).cmd(*args))

    def set_cable(self, leaf: str, spine: str, up: bool) -> None:
        """Take the leaf-spine cable down (both ends) or bring it back up."""
        cable = self.topo.cable(leaf, spine)
        state = "up" if up else "down"
        for intf in (cable.leaf_intf, cable.spine_intf):
            self.switch(leaf).cmd("ip link set dev", intf, state)


@contextlib.contextmanager
def running(topo: FabricTopo, **kwargs: Any) -> Iterator[Lab]:
    """``with running(topo) as lab:`` builds, starts and always tears down a :class:`Lab`."""
    with Lab(topo, **kwargs) as lab:
        yield lab
