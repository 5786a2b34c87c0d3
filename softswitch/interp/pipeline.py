"""The v1model architecture around the compiled blocks: BMv2 simple_switch semantics.

One packet goes through parser -> verifyChecksum -> ingress -> traffic
manager -> egress -> computeChecksum -> deparser, as ``simple_switch`` runs
it (its ``ingress_thread`` / ``egress_thread`` logic, one packet at a time):

* a parser error does not drop: ingress runs with ``parser_error`` set, and
  the bytes the parser did not consume follow the deparsed headers.  As
  p4c-bm2-ss compiles them, ``transition reject`` and a ``select`` with no
  matching case end parsing with ``parser_error`` left at NoError;
* resubmitted and recirculated packets start from zeroed metadata plus the
  preserved field list (so ``ingress_port`` reads 0 unless preserved);
* at the end of ingress, in order: ingress clone (the original packet is
  parsed again, metadata reset, the preserved field list copied,
  ``instance_type`` 1), resubmit (``instance_type`` 6, the packet goes back
  to the parser with the preserved fields), multicast (one copy per PRE
  replica, ``egress_rid`` set, ``instance_type`` 5), else unicast to
  ``egress_spec`` unless it is the drop port;
* at the end of egress: egress clone (headers as they are, metadata reset
  but the preserved fields, ``instance_type`` 2), drop if ``egress_spec`` is
  the drop port, deparse, then recirculate (``instance_type`` 4) or output.

``assert``/``assume`` that fail raise :class:`P4AssertionError` out of
:meth:`Pipeline.process` (BMv2 aborts the switch; we abort the packet and
tell the caller).  Where BMv2 would crash on a run-time header stack index
out of range (in a parser; controls follow p4c's HSIndexSimplifier, see
``Codegen.guarded``) or on ``.last`` of an empty stack outside a parser, the
packet is dropped and a warning logged.  ``log_msg`` goes to the
``softswitch.p4`` logger.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import random
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from softswitch.errors import SoftswitchError
from softswitch.frontend import ir
from softswitch.frontend.types import StructLike, StructT, strip_newtype
from softswitch.interp import trace, values
from softswitch.interp.codegen import Codegen
from softswitch.interp.extern_funcs import ExternFunction, bind
from softswitch.interp.objects import ValueSetState, build_objects
from softswitch.runtime import hashing
from softswitch.runtime.state import RuntimeState
from softswitch.runtime.tm import QueueTicket

LOG = logging.getLogger("softswitch.p4")

NORMAL, INGRESS_CLONE, EGRESS_CLONE, COALESCED, RECIRC, REPLICATION, RESUBMIT = range(7)
MAX_PASSES = 64


class P4AssertionError(SoftswitchError):
    """A v1model ``assert``/``assume`` failed while processing a packet."""


@dataclass(frozen=True, slots=True)
class Digest:
    """One ``digest()`` call: the data type name, receiver and field values."""

    name: str
    receiver: int
    values: tuple[int, ...]


class PacketCtx:
    """Per-packet state the generated code reads and writes (``pk``)."""

    __slots__ = (
        "checksum_error",
        "clone_spec",
        "drop_port",
        "entry",
        "length",
        "now_us",
        "payload",
        "pid",
        "pipeline",
        "recirculate",
        "resubmit",
        "std",
        "truncate",
    )

    def __init__(
        self, pipeline: Pipeline, std: Any, length: int, now_us: int, pid: str = ""
    ) -> None:
        self.pipeline = pipeline
        self.pid = pid
        self.std = std
        self.length = length
        self.now_us = now_us
        self.drop_port = pipeline.drop_port
        self.entry: Any = None
        self.checksum_error = 0
        self.payload = b""
        self.clone_spec: tuple[int, Any] | None = None
        self.resubmit: Any = None
        self.recirculate: Any = None
        self.truncate = 0

    def tr(self, level: int, message: str) -> None:
        """A trace message about this packet (traced builds only)."""
        trace.log(level, self.pid, message)

    def trace_table(
        self, name: str, keys: tuple[tuple[str, int], ...], values: tuple[int, ...], result: Any
    ) -> None:
        """A table applied (traced builds only)."""
        trace.table(self.pid, name, keys, values, result)

    def clone(self, session: int, field_list: Any) -> None:
        """clone / clone3 / clone_preserving_field_list."""
        self.clone_spec = (session, field_list)

    def digest(self, name: str, receiver: int, vals: tuple[int, ...]) -> None:
        """Queue a digest for the control plane."""
        self.pipeline.digests.append(Digest(name, receiver, vals))

    def random(self, lo: int, hi: int) -> int:
        """v1model ``random(lo, hi)``: uniform in [lo, hi]."""
        if hi < lo:
            return lo
        return self.pipeline.rng.randint(lo, hi)

    def assert_failed(self, loc: str, what: str) -> None:
        """A failed ``assert``/``assume``."""
        raise P4AssertionError(f"{loc}: {what} failed")

    def log(self, msg: str, vals: tuple[Any, ...]) -> None:
        """``log_msg``: ``{}`` placeholders take the values in order."""
        text = msg
        for v in vals:
            text = text.replace("{}", str(v), 1)
        LOG.info("%s", text)


@dataclass(slots=True)
class _Job:
    port: int
    data: bytes
    instance_type: int = NORMAL
    preserved: list[tuple[str, list[str], Any]] = field(default_factory=list)
    # standard_metadata.ingress_port when it is not ``port``: simple_switch
    # zeroes all metadata of a resubmitted packet before copying the field list
    std_port: int | None = None
    pid: str = ""  # "packet.copy" in trace messages (traced pipelines only)


@dataclass(slots=True)
class EgressJob:
    """A packet between ingress and egress: what the traffic manager queues."""

    hdr: Any
    meta: Any
    std: Any
    payload: bytes
    port: int
    length: int
    pid: str = ""

    @property
    def priority(self) -> int:
        """``standard_metadata.priority`` (0 when the architecture has none)."""
        return int(getattr(self.std, "f_priority", 0))


def _helpers() -> dict[str, Any]:
    def _drop(pk: PacketCtx, std: Any) -> None:
        std.f_egress_spec = pk.drop_port
        std.f_mcast_grp = 0

    def _hash(algo: str, base: int, fields: list[tuple[int, int]], max_: int, width: int) -> int:
        return hashing.v1model_hash(algo, base, fields, max_, width)

    def _csum(
        pk: PacketCtx, algo: str, fields: list[tuple[int, int]], payload: bytes, width: int
    ) -> int:
        del pk
        data = hashing.pack_fields(fields) + payload
        return hashing.compute(algo, data) & ((1 << width) - 1)

    def _meter(v: int | None) -> int:
        return 0 if v is None else v

    def _dmeter(x: Any, pk: PacketCtx) -> int:
        if pk.entry is None:
            return 0
        return int(x.execute(pk.entry, pk.length, pk.now_us))

    def _div(a: int, b: int) -> int:
        return a // b if b else 0

    def _mod(a: int, b: int) -> int:
        return a % b if b else 0

    def _mkstack(elems: list[Any]) -> values.Stack:
        return values.Stack(elems)

    return {
        "_drop": _drop,
        "_hash": _hash,
        "_csum": _csum,
        "_meter": _meter,
        "_dmeter": _dmeter,
        "_div": _div,
        "_mod": _mod,
        "_mkstack": _mkstack,
        "_hexkey": trace.hexkey,
        "Stack": values.Stack,
        "ParserReject": values.ParserReject,
        "ExitSignal": values.ExitSignal,
        "StackError": values.StackError,
        "_NO_SUBJECT": object(),
        "sx": values.sx,
        "shl": values.shl,
        "sat_add_s": values.sat_add_s,
        "sat_sub_s": values.sat_sub_s,
        "values_eq": values.values_eq,
        "copy_value": values.copy_value,
    }


class Pipeline:
    """A loaded program: ``process`` packets, configure it through ``state``."""

    def __init__(
        self,
        program: ir.Program,
        *,
        drop_port: int,
        cpu_port: int | None,
        clock: Callable[[], int] | None = None,
        seed: int = 0,
        extern_functions: Mapping[str, ExternFunction] | None = None,
        trace: bool = False,
    ) -> None:
        self.program = program
        self.trace = trace
        self._packet_ids = itertools.count()
        self._copy_ids = itertools.count(1)
        self.drop_port = drop_port
        self.cpu_port = cpu_port
        self.state = RuntimeState()
        self.digests: list[Digest] = []
        self.rng = random.Random(seed)
        start = time.monotonic_ns()
        self.clock = clock or (lambda: time.monotonic_ns() - start)
        pipe = program.pipeline
        for role in ("p", "vr", "ig", "eg", "ck", "dep"):
            if role not in pipe:
                raise SoftswitchError(f"{program.source}: not a V1Switch program (no '{role}')")
        ns = build_objects(program, self.state)
        self.value_sets: dict[str, ValueSetState] = {
            vs.name: ns[f"VS{vs.uid}"] for vs in program.value_sets
        }
        externs = dict(extern_functions or {})
        gen = Codegen(program, externs, trace=trace)
        ig, eg = pipe["ig"], pipe["eg"]
        for block in (ig, eg):
            gen.roots[block.params[1].name] = "meta"
            gen.roots[block.params[2].name] = "std"
        self._hdr_t = ig.params[0].type
        self._meta_t = ig.params[1].type
        self._std_t = ig.params[2].type
        names = [
            gen.classes.name(strip_newtype(t))  # type: ignore[arg-type]
            for t in (self._hdr_t, self._meta_t, self._std_t)
        ]
        self.source = gen.generate()
        ns.update(_helpers())
        ns["EXTF"] = [bind(site, externs[site.name]) for site in gen.extern_sites]
        code = compile(self.source, f"<softswitch:{program.source}>", "exec")
        exec(code, ns)
        self._new_hdr, self._new_meta, self._new_std = (ns[n] for n in names)
        self._parser = ns[f"B{pipe['p'].uid}"]
        self._verify = ns[f"B{pipe['vr'].uid}"]
        self._ingress = ns[f"B{ig.uid}"]
        self._egress = ns[f"B{eg.uid}"]
        self._compute = ns[f"B{pipe['ck'].uid}"]
        self._deparser = ns[f"B{pipe['dep'].uid}"]
        self._field_lists = _field_lists(self._meta_t)

    @classmethod
    def load(
        cls,
        program: ir.Program,
        *,
        drop_port: int = 511,
        cpu_port: int | None = None,
        clock: Callable[[], int] | None = None,
        seed: int = 0,
        extern_functions: Mapping[str, ExternFunction] | None = None,
        trace: bool = False,
    ) -> Pipeline:
        """Compile ``program`` and build its runtime state; ``extern_functions``
        implement the extern functions the program declares itself; ``trace`` logs
        every packet's way through it (:mod:`softswitch.interp.trace`)."""
        return cls(
            program,
            drop_port=drop_port,
            cpu_port=cpu_port,
            clock=clock,
            seed=seed,
            extern_functions=extern_functions,
            trace=trace,
        )

    # ------------------------------------------------------------------

    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        """Run one packet received on ``port``; returns the packets sent, in order.

        The traffic manager is ``state.tm`` in virtual time (:meth:`TrafficManager.transit`):
        each packet goes through egress as soon as ingress is done with it.
        """
        out: list[tuple[int, bytes]] = []
        ingress: deque[_Job] = deque([self._received(port, data)])
        egress: deque[EgressJob] = deque()
        passes = 0
        while ingress or egress:
            passes += 1
            if passes > MAX_PASSES * 4:
                break
            try:
                if egress:
                    self._transit_egress(egress.popleft(), egress, ingress, out)
                else:
                    self._run_ingress(ingress.popleft(), egress, ingress)
            except (values.StackError, values.ParserReject) as err:
                _dropped(port, err)
        return out

    def ingress(self, port: int, data: bytes) -> deque[EgressJob]:
        """Ingress of one packet received on ``port``, resubmissions included: the
        packets for the traffic manager (each with its ``port`` and ``priority``)."""
        ingress: deque[_Job] = deque([self._received(port, data)])
        egress: deque[EgressJob] = deque()
        self._ingress_all(port, ingress, egress)
        return egress

    def egress(
        self, job: EgressJob, ticket: QueueTicket
    ) -> tuple[list[tuple[int, bytes]], deque[EgressJob]]:
        """Egress of a packet the traffic manager let out with ``ticket``: the frames to
        send, and the packets for the traffic manager (egress clones, and what a
        recirculated packet's ingress made)."""
        out: list[tuple[int, bytes]] = []
        ingress: deque[_Job] = deque()
        egress: deque[EgressJob] = deque()
        try:
            self._egress_with(job, ticket, egress, ingress, out)
        except (values.StackError, values.ParserReject) as err:
            _dropped(job.port, err)
        if ingress:
            self._ingress_all(job.port, ingress, egress)
        return out, egress

    def _received(self, port: int, data: bytes) -> _Job:
        job = _Job(port, bytes(data))
        if self.trace:
            job.pid = f"{next(self._packet_ids)}.0"
            trace.log(trace.DEBUG, job.pid, f"Processing packet received on port {port}")
        return job

    def _copy_id(self, pid: str) -> str:
        """The trace id of a copy (clone, replica) of packet ``pid``."""
        if not self.trace:
            return ""
        return f"{pid.partition('.')[0]}.{next(self._copy_ids)}"

    def _ingress_all(self, port: int, ingress: deque[_Job], egress: deque[EgressJob]) -> None:
        passes = 0
        while ingress and passes < MAX_PASSES:
            passes += 1
            try:
                self._run_ingress(ingress.popleft(), egress, ingress)
            except (values.StackError, values.ParserReject) as err:
                _dropped(port, err)

    def _now(self) -> int:
        return self.clock()

    def _parse(self, job: _Job, std: Any, hdr: Any, meta: Any, pk: PacketCtx) -> bytes:
        pkt = values.PacketIn(job.data)
        if self.trace:
            pk.tr(trace.DEBUG, "Parser 'parser': start")
        try:
            self._parser(pk, pkt, hdr, meta, std)
        except values.ParserReject as err:
            std.f_parser_error = err.code
        payload = pkt.payload()
        if self.trace:
            pk.tr(trace.TRACE, f"Bytes parsed: {len(job.data) - len(payload)}")
            pk.tr(trace.DEBUG, "Parser 'parser': end")
        return payload

    def _fresh(self, job: _Job, now_us: int) -> tuple[Any, Any, Any]:
        hdr, meta, std = self._new_hdr(), self._new_meta(), self._new_std()
        std.f_ingress_port = job.port if job.std_port is None else job.std_port
        std.f_packet_length = len(job.data)
        std.f_instance_type = job.instance_type
        if job.instance_type == NORMAL:
            # simple_switch stamps a packet when it is received; resubmitted and
            # recirculated packets start from zeroed metadata
            std.f_ingress_global_timestamp = now_us & 0xFFFFFFFFFFFF
        for root, path, value in job.preserved:
            _set_path(meta if root == "meta" else std, path, value)
        return hdr, meta, std

    def _control(
        self, name: str, block: Callable[..., None], pk: PacketCtx, args: tuple[Any, Any, Any]
    ) -> None:
        """Run the ingress or egress control ``block`` on (hdr, meta, std); ``exit`` ends it."""
        if self.trace:
            pk.tr(trace.DEBUG, f"Pipeline '{name}': start")
        with contextlib.suppress(values.ExitSignal):
            block(pk, *args)
        if self.trace:
            pk.tr(trace.DEBUG, f"Pipeline '{name}': end")

    def _run_ingress(self, job: _Job, egress: deque[EgressJob], ingress: deque[_Job]) -> None:
        now_ns = self._now()
        now_us = now_ns // 1000
        hdr, meta, std = self._fresh(job, now_us)
        pk = PacketCtx(self, std, len(job.data), now_us, job.pid)
        payload = self._parse(job, std, hdr, meta, pk)
        pk.payload = payload
        self._verify(pk, hdr, meta)
        std.f_checksum_error = pk.checksum_error
        traced = self.trace
        self._control("ingress", self._ingress, pk, (hdr, meta, std))
        if pk.clone_spec is not None:
            self._ingress_clone(job, pk, meta, std, egress, now_us=now_us)
        if pk.resubmit is not None:
            if traced:
                pk.tr(trace.DEBUG, "Resubmitting packet")
            kept = self._preserve(pk.resubmit, meta, std)
            ingress.appendleft(_Job(job.port, job.data, RESUBMIT, kept, std_port=0, pid=job.pid))
            return
        mgid = std.f_mcast_grp
        if mgid:
            std.f_instance_type = REPLICATION
            if traced:
                pk.tr(trace.DEBUG, "Multicast requested for packet")
            for eport, rid in self.state.pre.replicate(mgid):
                h2, m2, s2 = hdr.copy(), meta.copy(), std.copy()
                s2.f_egress_rid = rid
                pid = self._copy_id(job.pid)
                if traced:
                    trace.log(trace.DEBUG, pid, f"Replicating packet on port {eport}")
                egress.append(EgressJob(h2, m2, s2, payload, eport, len(job.data), pid))
            return
        eport = std.f_egress_spec
        if traced:
            pk.tr(trace.DEBUG, f"Egress port is {eport}")
        if eport == self.drop_port:
            if traced:
                pk.tr(trace.DEBUG, "Dropping packet at the end of ingress")
            return
        std.f_instance_type = NORMAL
        egress.append(EgressJob(hdr, meta, std, payload, eport, len(job.data), job.pid))

    def _ingress_clone(
        self,
        job: _Job,
        pk: PacketCtx,
        meta: Any,
        std: Any,
        egress: deque[EgressJob],
        *,
        now_us: int,
    ) -> None:
        assert pk.clone_spec is not None
        session, fl = pk.clone_spec
        if self.state.pre.clone_session(session) is None:
            return
        kept = self._preserve(fl, meta, std)
        if self.trace:
            pk.tr(trace.DEBUG, "Cloning packet at ingress")
        for eport, rid in self.state.pre.clone_targets(session):
            cjob = _Job(job.port, job.data, INGRESS_CLONE, pid=self._copy_id(job.pid))
            hdr2, meta2, std2 = self._fresh(cjob, now_us)
            pk2 = PacketCtx(self, std2, len(job.data), now_us, cjob.pid)
            payload2 = self._parse(cjob, std2, hdr2, meta2, pk2)
            meta2, std2 = self._new_meta(), self._new_std()
            std2.f_instance_type = INGRESS_CLONE
            std2.f_packet_length = len(job.data)
            for root, path, value in kept:
                _set_path(meta2 if root == "meta" else std2, path, value)
            std2.f_egress_rid = rid
            if self.trace:
                pk2.tr(trace.DEBUG, f"Cloning packet to egress port {eport}")
            egress.append(EgressJob(hdr2, meta2, std2, payload2, eport, len(job.data), cjob.pid))

    def _preserve(self, fl: Any, meta: Any, std: Any) -> list[tuple[str, list[str], Any]]:
        if fl is None:
            return []
        if isinstance(fl, tuple) and fl and fl[0] == "index":
            paths = self._field_lists.get(int(fl[1]), [])
        else:
            paths = list(fl)
        out = []
        for root, path in paths:
            out.append(
                (root, path, values.copy_value(_get_path(meta if root == "meta" else std, path)))
            )
        return out

    def _transit_egress(
        self,
        job: EgressJob,
        egress: deque[EgressJob],
        ingress: deque[_Job],
        out: list[tuple[int, bytes]],
    ) -> None:
        queue = self.state.tm.queue_for(job.priority)
        if queue is None:
            LOG.error("priority out of range, dropping packet (port %d)", job.port)
            return
        ticket = self.state.tm.transit(job.port, self._now(), priority=queue)
        if ticket is None:
            return
        self._egress_with(job, ticket, egress, ingress, out)

    def _egress_with(
        self,
        job: EgressJob,
        ticket: QueueTicket,
        egress: deque[EgressJob],
        ingress: deque[_Job],
        out: list[tuple[int, bytes]],
    ) -> None:
        now_ns = self._now()
        std, hdr, meta = job.std, job.hdr, job.meta
        std.f_enq_timestamp = ticket.enq_timestamp & 0xFFFFFFFF
        std.f_enq_qdepth = ticket.enq_qdepth & 0x7FFFF
        std.f_deq_timedelta = ticket.deq_timedelta & 0xFFFFFFFF
        std.f_deq_qdepth = ticket.deq_qdepth & 0x7FFFF
        now_us = now_ns // 1000
        std.f_egress_global_timestamp = now_us & 0xFFFFFFFFFFFF
        std.f_egress_port = job.port
        std.f_egress_spec = (self.drop_port + 1) & 0x1FF
        std.f_packet_length = job.length
        pk = PacketCtx(self, std, job.length, now_us, job.pid)
        pk.payload = job.payload
        traced = self.trace
        self._control("egress", self._egress, pk, (hdr, meta, std))
        if pk.clone_spec is not None:
            self._egress_clone(job, pk, egress)
        if std.f_egress_spec == self.drop_port:
            if traced:
                pk.tr(trace.DEBUG, "Dropping packet at the end of egress")
            return
        self._compute(pk, hdr, meta)
        o = values.PacketOut()
        if traced:
            pk.tr(trace.DEBUG, "Deparser 'deparser': start")
        self._deparser(pk, o, hdr)
        if traced:
            pk.tr(trace.DEBUG, "Deparser 'deparser': end")
        data = o.to_bytes() + job.payload
        if pk.truncate:
            data = data[: pk.truncate]
        if pk.recirculate is not None:
            if traced:
                pk.tr(trace.DEBUG, "Recirculating packet")
            kept = self._preserve(pk.recirculate, meta, std)
            ingress.append(_Job(0, data, RECIRC, kept, pid=job.pid))
            return
        if traced:
            pk.tr(trace.DEBUG, f"Transmitting packet of size {len(data)} out of port {job.port}")
        out.append((job.port, data))

    def _egress_clone(self, job: EgressJob, pk: PacketCtx, egress: deque[EgressJob]) -> None:
        assert pk.clone_spec is not None
        session, fl = pk.clone_spec
        if self.state.pre.clone_session(session) is None:
            return
        if self.trace:
            pk.tr(trace.DEBUG, "Cloning packet at egress")
        kept = self._preserve(fl, job.meta, job.std)
        for eport, rid in self.state.pre.clone_targets(session):
            m2, s2 = self._new_meta(), self._new_std()
            for root, path, value in kept:
                _set_path(m2 if root == "meta" else s2, path, value)
            s2.f_instance_type = EGRESS_CLONE
            s2.f_egress_rid = rid
            pid = self._copy_id(job.pid)
            if self.trace:
                pk.tr(trace.DEBUG, f"Cloning packet to egress port {eport}")
            hdr2 = job.hdr.copy()
            egress.append(EgressJob(hdr2, m2, s2, job.payload, eport, job.length, pid))


def _dropped(port: int, err: Exception) -> None:
    # BMv2 would abort here (an uncaught std::out_of_range, or an assertion on an
    # empty stack's .last outside a parser); this target drops the one packet instead.
    LOG.warning("packet from port %d dropped: %s", port, _describe(err))


def _describe(err: Exception) -> str:
    if isinstance(err, values.ParserReject):
        return "header stack .last of an empty stack outside a parser"
    return str(err)


def _get_path(obj: Any, path: list[str]) -> Any:
    for attr in path:
        obj = getattr(obj, attr)
    return obj


def _set_path(obj: Any, path: list[str], value: Any) -> None:
    for attr in path[:-1]:
        obj = getattr(obj, attr)
    target = getattr(obj, path[-1])
    if hasattr(target, "assign"):
        target.assign(value)
    else:
        setattr(obj, path[-1], values.copy_value(value))


def _field_lists(meta_t: Any) -> dict[int, list[tuple[str, list[str]]]]:
    """``@field_list(i, ...)`` annotations of the user metadata fields, by index."""
    out: dict[int, list[tuple[str, list[str]]]] = {}

    def walk(t: Any, path: list[str]) -> None:
        st = strip_newtype(t)
        if not isinstance(st, StructLike):
            return
        for f, ft in st.fields.items():
            for ann in st.field_annotations.get(f, []):
                if ann.name == "field_list":
                    for idx in ann.args:
                        if isinstance(idx, int):
                            out.setdefault(idx, []).append(("meta", [*path, f"f_{f}"]))
            if isinstance(strip_newtype(ft), StructT):
                walk(ft, [*path, f"f_{f}"])

    walk(meta_t, [])
    return out


__all__ = ["Digest", "EgressJob", "P4AssertionError", "PacketCtx", "Pipeline"]
