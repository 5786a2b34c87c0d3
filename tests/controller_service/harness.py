"""Real parts for the controller service's tests and benchmark.

- :func:`compile_pipeline`: ``kvfabric compile`` of p4/kv_fabric.p4, once;
- :class:`RunningSwitches`: four ``kvfabric switch`` processes (2 leaves x 2 spines, the
  shape of topologies/lab-2x2.yaml) on ephemeral gRPC ports, optionally cabled by
  veth pairs so that probes really cross from switch to switch (and some host ports
  given a veth whose far end a test sends frames from), and the fabric file naming
  their real addresses; every port is provisioned at the file's 20 Mb/s
  (``--port-speed``), which is what it reports over gNMI (a veth alone says 10 Gb/s);
- :class:`ControllerProc`: ``kvfabric controller`` as a child process, stopped or
  killed by its pid; its API port is read from the line it prints;
- :class:`Api`: a blocking HTTP client for the API, and :func:`metric` to read one
  sample from a Prometheus scrape.

Every process is tracked by pid and every veth is named after this process and
removed by name.
"""

from __future__ import annotations

import http.client
import itertools
import json
import os
import re
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import finsy as fy
import grpc
from finsy.p4schema import P4Schema
from finsy.proto import p4r, p4r_grpc

from controller.service.southbound import ledger
from kvfabric.client._sync import Connection
from softswitch.switch.process import SwitchProcess
from tests.support import processes
from tests.support.netns import veth

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "p4" / "kv_fabric.p4"
CPU_PORT = 255
LINK_RATE = "20Mbps"
"""Every link's capacity in the fabric file, and the speed every port reports."""
READY = "kvfabric controller: API listening on "
_ids = itertools.count()

SWITCHES = (("leaf1", "leaf", 1), ("leaf2", "leaf", 2), ("spine1", "spine", 3),
            ("spine2", "spine", 4))  # fmt: skip
# (leaf, leaf port, spine, spine port): topologies/lab-2x2.yaml's cabling
CABLES = (("leaf1", 3, "spine1", 1), ("leaf2", 3, "spine1", 2), ("leaf1", 4, "spine2", 1),
          ("leaf2", 4, "spine2", 2))  # fmt: skip
HOSTS = (("h11", "leaf1", 1, "10.0.1.1", "prefill"), ("h12", "leaf1", 2, "10.0.1.2", "prefill"),
         ("h21", "leaf2", 1, "10.0.2.1", "decode"),
         ("h22", "leaf2", 2, "10.0.2.2", "decode"))  # fmt: skip


def compile_pipeline(out: Path) -> tuple[Path, Path]:
    """P4Info and device config of p4/kv_fabric.p4 in ``out``."""
    p4info, blob = out / "kv_fabric.p4info.txtpb", out / "kv_fabric.json"
    if not blob.exists():
        subprocess.run(
            [sys.executable, "-m", "kvfabric.cli", "compile", str(PROGRAM),
             "--p4runtime-files", str(p4info), "-o", str(blob)],
            check=True, capture_output=True,
        )  # fmt: skip
    return p4info, blob


def _run(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True)


@dataclass
class RunningSwitches:
    """Four switch processes and the fabric file that names them."""

    workdir: Path
    veths: bool = False
    host_veths: tuple[str, ...] = ()
    controller: str = ""
    target_args: tuple[str, ...] = ()
    switch_args: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Options of one switch's own command line (before ``--``), by switch name."""
    switches: dict[str, SwitchProcess] = field(default_factory=dict)
    cables: dict[tuple[str, str], str] = field(default_factory=dict)
    host_ends: dict[str, str] = field(default_factory=dict)
    stack: ExitStack = field(default_factory=ExitStack)
    path: Path = Path()

    def start(self) -> RunningSwitches:
        ports: dict[str, list[str]] = {name: [] for name, _, _ in SWITCHES}
        if self.veths:
            for leaf, lport, spine, sport in CABLES:
                a, b = self._veth()
                ports[leaf] += ["-i", f"{lport}@{a}"]
                ports[spine] += ["-i", f"{sport}@{b}"]
                self.cables[leaf, spine] = a
        for host, leaf, port, _ip, _pool in HOSTS:
            if host in self.host_veths:
                a, b = self._veth()
                ports[leaf] += ["-i", f"{port}@{a}"]
                self.host_ends[host] = b  # the host's end: frames sent here enter the leaf
        for name, _role, device in SWITCHES:
            argv = [*ports[name], "--device-id", str(device), "--port-speed", LINK_RATE,
                    *self.switch_args.get(name, ()), "--no-p4", "--",
                    "--grpc-server-addr", "127.0.0.1:0", "--cpu-port", str(CPU_PORT),
                    *self.target_args]  # fmt: skip
            self.switches[name] = self.stack.enter_context(SwitchProcess(argv))
        self.path = self.workdir / "fabric.yaml"
        self.path.write_text(self.yaml())
        return self

    def kill(self, name: str) -> None:
        """Kill switch ``name`` with SIGKILL (a crash: its state is lost)."""
        old = self.switches[name]
        if old.running():
            os.kill(old.pid, signal.SIGKILL)
            assert old.proc is not None
            old.proc.wait()

    def restart(self, name: str) -> float:
        """Kill switch ``name`` (if it runs) and start it again on the same address;
        returns the monotonic time at which the new process listens."""
        self.kill(name)
        old = self.switches[name]
        argv = [old.address if a == "127.0.0.1:0" else a for a in old.argv]
        self.switches[name] = self.stack.enter_context(SwitchProcess(argv))
        return time.monotonic()

    def _veth(self) -> tuple[str, str]:
        pair = self.stack.enter_context(veth("kc"))
        return pair.outside, pair.inside

    def set_cable(self, leaf: str, spine: str, up: bool) -> None:
        """Take the veth of a cable down (or up again) at its leaf end."""
        _run("ip", "link", "set", self.cables[leaf, spine], "up" if up else "down")

    def yaml(self) -> str:
        lines = ["name: test-2x2", "switches:"]
        for name, role, device in SWITCHES:
            addr = self.switches[name].address
            subnet = f", subnet: 10.0.{device}.0/24" if role == "leaf" else ""
            lines.append(f"  - {{name: {name}, role: {role}, p4runtime: \"{addr}\", "
                         f"device_id: {device}{subnet}}}")  # fmt: skip
        lines.append("hosts:")
        for name, leaf, port, ip, pool in HOSTS:
            mac = f"08:00:00:00:0{leaf[-1]}:0{port}"
            lines.append(f"  - {{name: {name}, leaf: {leaf}, port: {port}, ipv4: {ip}/24, "
                         f"mac: \"{mac}\", pool: {pool}, capacity: {LINK_RATE}}}")  # fmt: skip
        lines.append("links:")
        for leaf, lport, spine, sport in CABLES:
            lines.append(f"  - {{a: {{switch: {leaf}, port: {lport}}}, "
                         f"b: {{switch: {spine}, port: {sport}}}, "
                         f"capacity: {LINK_RATE}}}")  # fmt: skip
        lines.append("controller:")
        lines.append("  telemetry: {poll_interval: 100ms, staleness_limit: 500ms}")
        lines.append("  audit_interval: 100ms")
        lines.append(self.controller or "  mode: kv-aware")
        return "\n".join(lines) + "\n"

    def close(self) -> None:
        self.stack.close()


class ControllerProc:
    """``kvfabric controller`` as a child process."""

    def __init__(self, fabric: Path, pipeline: tuple[Path, Path], *extra: str) -> None:
        self.fabric = fabric
        self.pipeline = pipeline
        self.extra = list(extra)
        self.proc: subprocess.Popen[str] | None = None
        self.stderr = tempfile.NamedTemporaryFile(  # noqa: SIM115 (closed in stop)
            "w+", prefix="kvfabric-controller-", suffix=".log", delete=False
        )
        self.host = ""
        self.port = 0

    def start(self, timeout: float = 30.0) -> ControllerProc:
        p4info, blob = self.pipeline
        command = [sys.executable, "-m", "kvfabric.cli", "controller", "--config", str(self.fabric),
                   "--p4info", str(p4info), "--p4blob", str(blob), "--bind", "127.0.0.1:0",
                   *self.extra]  # fmt: skip
        self.proc = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=self.stderr, stdin=subprocess.DEVNULL, text=True
        )
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            while time.monotonic() < deadline:
                if sel.select(deadline - time.monotonic()):
                    line = self.proc.stdout.readline()
                    if not line:
                        break
                    if line.startswith(READY):
                        host, _, port = line[len(READY) :].strip().rpartition(":")
                        self.host, self.port = host, int(port)
                        return self
        self.stop()
        raise RuntimeError(f"the controller did not start:\n{self.log()}")

    def api(self, token: str | None = None) -> Api:
        return Api(self.host, self.port, token)

    def log(self) -> str:
        self.stderr.flush()
        return Path(self.stderr.name).read_text(errors="replace")

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> int | None:
        """Signal this pid (SIGTERM: clean stop; SIGKILL: a crash) and reap it."""
        proc = self.proc
        if proc is None:
            return None
        processes.stop(proc, sig, timeout)
        if proc.stdout is not None:
            proc.stdout.close()
        return proc.returncode

    def close(self) -> None:
        self.stop()
        self.stderr.close()
        Path(self.stderr.name).unlink(missing_ok=True)


class Api:
    """A blocking client of the controller's API over one keep-alive connection."""

    def __init__(self, host: str, port: int, token: str | None = None) -> None:
        self.host, self.port, self.token = host, port, token
        self.conn = Connection(host, port, timeout=10)

    def call(
        self, method: str, path: str, body: object = None, *, raw: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any]:  # fmt: skip
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        head = {"Content-Type": "application/json", **(headers or {})}
        if self.token:
            head["Authorization"] = f"Bearer {self.token}"
        try:
            self.conn.request(method, path, body=data, headers=head)
            response = self.conn.getresponse()
        except (ConnectionError, http.client.HTTPException):
            self.conn.close()
            self.conn = Connection(self.host, self.port, timeout=10)
            self.conn.request(method, path, body=data, headers=head)
            response = self.conn.getresponse()
        payload = response.read()
        if response.getheader("Content-Type", "").startswith("application/json"):
            return response.status, json.loads(payload)
        return response.status, payload.decode()

    def wait_ready(self, timeout: float = 30.0) -> dict[str, Any]:
        """Wait until the controller is provisioned and every switch reports telemetry."""
        deadline = time.monotonic() + timeout
        view: Any = None
        while time.monotonic() < deadline:
            status, view = self.call("GET", "/v1/fabric")
            if (
                status == 200
                and view["controller"]["ready"]
                and all(age is not None for age in view["staleness_s"].values())
            ):
                return dict(view)
            time.sleep(0.1)
        raise AssertionError(f"the controller was not ready in {timeout}s: {view}")

    def close(self) -> None:
        self.conn.close()


@dataclass(frozen=True)
class Served:
    """A compiled pipeline, four switches and a ready controller (``--no-audit``)."""

    pipeline: tuple[Path, Path]
    fabric: RunningSwitches
    controller: ControllerProc
    api: Api


@contextmanager
def served_fabric(work: Path, controller_section: str = "") -> Iterator[Served]:
    """:class:`Served` in ``work`` (``controller_section``: the fabric file's controller
    lines after telemetry and audit; default ``mode: kv-aware``); the controller and
    the switches are stopped on exit."""
    pipeline = compile_pipeline(work)
    fabric = RunningSwitches(work, controller=controller_section).start()
    controller: ControllerProc | None = None
    try:  # the switches are stopped however the rest fails
        controller = ControllerProc(fabric.path, pipeline, "--no-audit")
        controller.start()
        api = controller.api()
        api.wait_ready()
        yield Served(pipeline, fabric, controller, api)
        api.close()
    finally:
        if controller is not None:
            controller.close()
        fabric.close()


def metric(text: str, series: str, /, **labels: str) -> float | None:
    """The value of sample ``series{labels}`` in a Prometheus scrape (None if absent)."""
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(series):
            continue
        m = re.match(r"^([a-zA-Z_:][\w:]*)(\{(.*)\})?\s+(\S+)$", line)
        if m is None or m.group(1) != series:
            continue
        found = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        if all(found.get(k) == v for k, v in labels.items()):
            return float(m.group(4))
    return None


def link_status(api: Api, link: str) -> str:
    """The audit's status of ``link`` (``leaf1:3-spine1:1``) in ``GET /v1/fabric``."""
    view: dict[str, Any] = api.call("GET", "/v1/fabric")[1]
    return next(str(x["status"]) for x in view["links"] if x["link"] == link)


def wait_for(predicate: Any, timeout: float = 10.0, step: float = 0.05) -> Any:
    """Poll ``predicate()`` until it returns something truthy; AssertionError on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"condition not met within {timeout}s")


def kill_all(procs: Sequence[ControllerProc]) -> None:
    for p in procs:
        p.close()


class Reader:
    """Reads a switch's state with plain Read RPCs: no stream, no arbitration.

    A test must not open a P4Runtime stream of its own: when a primary dies the switch
    would offer the role to every client left, the test's included.
    """

    def __init__(self, p4info: Path) -> None:
        self.schema = P4Schema(p4info)

    def read(self, address: str, device_id: int, *entities: Any) -> list[Any]:
        request = p4r.ReadRequest(
            device_id=device_id, entities=[e.encode(self.schema) for e in entities]
        )
        with grpc.insecure_channel(address) as channel:
            stub = p4r_grpc.P4RuntimeStub(channel)
            out: list[Any] = []
            for reply in stub.Read(request, timeout=5):
                out += [fy.P4TableEntry.decode(e, self.schema) if e.HasField("table_entry")
                        else e for e in reply.entities]  # fmt: skip
            return out

    def table(self, fabric: RunningSwitches, switch: str, table: str) -> list[Any]:
        device = next(d for name, _, d in SWITCHES if name == switch)
        return self.read(fabric.switches[switch].address, device, fy.P4TableEntry(table))

    def groups(self, fabric: RunningSwitches, switch: str) -> dict[int, list[int]]:
        device = next(d for name, _, d in SWITCHES if name == switch)
        found = self.read(
            fabric.switches[switch].address, device, fy.P4ActionProfileGroup("ecmp_selector")
        )
        return {
            e.action_profile_group.group_id: sorted(
                m.member_id for m in e.action_profile_group.members
            )
            for e in found
        }

    def ranges(self, fabric: RunningSwitches, leaf: str) -> dict[tuple[int, int, int], int]:
        """A leaf's static spine ranges: (group, first port, last port) -> uplink."""
        return {
            (e.match["ecmp_group"], *e.match["l4_src_port"]): e.action.args["port"]
            for e in self.table(fabric, leaf, "kv_range")
        }

    def ledger(self, fabric: RunningSwitches, leaf: str) -> list[dict[str, Any]]:
        """The transfers in flight a leaf's ledger holds (its range entries' metadata)."""
        return [
            {"id": r.meta.id, "trace": r.meta.trace_id, "port": r.port,
             "egress": e.action.args["port"]}
            for e in self.table(fabric, leaf, "kv_range")
            for r in ledger.decode(bytes(e.metadata)) or ()
        ]  # fmt: skip

    def wait_ledger(self, fabric: RunningSwitches, ids: Iterable[str], leaf: str = "leaf1") -> bool:
        """Wait until a leaf's ledger holds exactly the transfers ``ids`` (it is written
        within a poll interval of a change)."""
        want = sorted(ids)
        try:
            return bool(
                wait_for(lambda: sorted(r["id"] for r in self.ledger(fabric, leaf)) == want)
            )
        except AssertionError:
            raise AssertionError(
                f"{leaf}'s ledger: {self.ledger(fabric, leaf)}, not {want}"
            ) from None

    def count(self, fabric: RunningSwitches, switch: str) -> int:
        """Every table entry, member and group the switch holds."""
        device = next(d for name, _, d in SWITCHES if name == switch)
        return len(self.read(
            fabric.switches[switch].address, device, fy.P4TableEntry(),
            fy.P4ActionProfileMember("ecmp_selector"), fy.P4ActionProfileGroup("ecmp_selector"),
        ))  # fmt: skip
