"""Per-transfer OpenTelemetry spans, exported over OTLP/HTTP when an endpoint is given.

Each transfer is one span, ``kv_transfer``, from its request to its completion (or
its timeout). Inside it:

- event ``request`` (the pair, the bytes, the sender's trace id);
- child span ``decision``: the engine's choice, with the utilisation it saw;
- child span ``pin_write`` when the engine pinned the transfer: the leaf, the spine,
  and whether the leaf took the entry;
- event ``start``: the answer is on its way to the sender, which starts sending;
- event ``completion``, with the duration the sender reported, then the span ends.

The transfer span carries the attributes: ``kv.pair`` (source leaf > destination leaf),
``kv.src``, ``kv.dst``, ``kv.bytes``, ``kv.spine`` (empty on ECMP), ``kv.slices.spine``
and ``kv.slices.bytes`` (a transfer split over spines: one entry per slice, in the
answer's order), ``kv.placement``, ``kv.reason``, ``kv.mode``, ``kv.trace_id``,
``kv.transfer_id``, the utilisation of the chosen path's two ports at the decision
(``kv.utilisation.up``, ``kv.utilisation.down``, absent on ECMP) and, for every
candidate spine, ``kv.candidates.spine``, ``kv.candidates.up_util`` and
``kv.candidates.down_util`` (lists in the same order); at its end ``kv.duration_s`` and
``kv.timed_out``.

Spans end when the transfer log gets the transfer's ``transfer`` record (the engine
writes it on completion and on timeout), so the tracer listens to
:class:`~controller.service.translog.TransferLog` and needs no hook in the engine.
Times are wall-clock, from the service's clocks.

:class:`TransferTracer` exports nothing, and does not even import the SDK, unless
an endpoint is given (``kvfabric controller --otlp-endpoint URL``). It uses its own
``TracerProvider``, never the process-global one, and :meth:`close` flushes it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from controller.engine import Decision
from controller.engine.inflight import Choice

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span, Tracer

log = logging.getLogger("kvfabric.controller.tracing")

SERVICE_NAME = "kvfabric-controller"
EXPORT_DELAY_MS = 500
"""How long a finished span may wait before its batch is sent."""
EXPORT_TIMEOUT_S = 5.0


def traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL of a collector: ``http://host:4318`` gets ``/v1/traces``."""
    base = endpoint.rstrip("/")
    return base if base.endswith("/v1/traces") else f"{base}/v1/traces"


@dataclass(frozen=True, slots=True)
class Timing:
    """Wall-clock times (seconds) of one transfer request's steps."""

    requested: float
    decided: float
    written: float
    answered: float


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)


class TransferTracer:
    """Spans of transfers (see the module docstring); a no-op without an endpoint."""

    def __init__(self, endpoint: str | None, instance: str) -> None:
        self.endpoint = endpoint
        self.instance = instance
        self._provider: TracerProvider | None = None
        self._tracer: Tracer | None = None
        self._open: dict[str, Span] = {}
        if endpoint is None:
            return
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        resource = Resource.create({"service.name": SERVICE_NAME, "service.instance.id": instance})
        self._provider = TracerProvider(resource=resource)
        exporter = OTLPSpanExporter(endpoint=traces_url(endpoint), timeout=EXPORT_TIMEOUT_S)
        self._provider.add_span_processor(
            BatchSpanProcessor(exporter, schedule_delay_millis=EXPORT_DELAY_MS)
        )
        self._tracer = self._provider.get_tracer("kvfabric.controller")

    @property
    def enabled(self) -> bool:
        """True when spans are exported."""
        return self._tracer is not None

    def answered(
        self,
        *,
        api_id: str,
        spine: str | None,
        placement_name: str,
        decision: Decision,
        choice: Choice | None,
        pair: str,
        timing: Timing,
    ) -> None:
        """Open the span of a transfer just answered, with its request, decision and pin."""
        tracer = self._tracer
        if tracer is None:
            return
        from opentelemetry import trace

        attributes: dict[str, Any] = {
            "kv.transfer_id": api_id,
            "kv.trace_id": decision.trace_id,
            "kv.pair": pair,
            "kv.src": decision.src,
            "kv.dst": decision.dst,
            "kv.bytes": decision.bytes,
            "kv.spine": spine or "",
            "kv.placement": placement_name,
            "kv.reason": decision.reason,
            "kv.mode": str(decision.mode),
        }
        if decision.slices:
            attributes["kv.slices.spine"] = [sl.path.spine for sl in decision.slices]
            attributes["kv.slices.bytes"] = [sl.bytes for sl in decision.slices]
        attributes |= _utilisation(choice)
        span = tracer.start_span(
            "kv_transfer", start_time=_ns(timing.requested), attributes=attributes
        )
        span.add_event(
            "request",
            {"kv.src": decision.src, "kv.dst": decision.dst, "kv.bytes": decision.bytes},
            timestamp=_ns(timing.requested),
        )
        context = trace.set_span_in_context(span)
        child = tracer.start_span(
            "decision", context=context, start_time=_ns(timing.requested),
            attributes={k: v for k, v in attributes.items()
                        if k.startswith(("kv.utilisation", "kv.candidates"))
                        or k in ("kv.reason", "kv.spine", "kv.mode")},
        )  # fmt: skip
        if decision.fallbacks:
            child.set_attribute("kv.fallbacks", list(decision.fallbacks))
        child.end(end_time=_ns(timing.decided))
        if decision.path is not None:
            pin = tracer.start_span(
                "pin_write", context=context, start_time=_ns(timing.decided),
                attributes={"kv.leaf": decision.path.src_leaf, "kv.spine": decision.path.spine,
                            "kv.written": placement_name == "pinned"},
            )  # fmt: skip
            pin.end(end_time=_ns(timing.written))
        span.add_event("start", {"kv.placement": placement_name},
                       timestamp=_ns(timing.answered))  # fmt: skip
        self._open[api_id] = span

    def on_record(self, record: Mapping[str, object]) -> None:
        """A transfer-log record: a ``transfer`` record ends its transfer's span."""
        if self._tracer is None or record.get("event") != "transfer":
            return
        span = self._open.pop(self._key(record), None)
        if span is None:
            return
        duration = record.get("duration_s")
        timed_out = bool(record.get("timed_out"))
        end = record.get("time_wall")
        span.set_attribute("kv.timed_out", timed_out)
        if isinstance(duration, int | float):
            span.set_attribute("kv.duration_s", float(duration))
        span.add_event(
            "timeout" if timed_out else "completion",
            {"kv.duration_s": float(duration) if isinstance(duration, int | float) else -1.0},
            timestamp=_ns(float(end)) if isinstance(end, int | float) else None,
        )
        span.end(end_time=_ns(float(end)) if isinstance(end, int | float) else None)

    def _key(self, record: Mapping[str, object]) -> str:
        """The API id of a record's transfer (engine records carry the engine's number)."""
        transfer_id = record.get("transfer_id")
        if isinstance(transfer_id, int):
            return f"{self.instance}-{transfer_id}"
        return str(transfer_id)

    def close(self) -> None:
        """End the spans still open (the controller stops) and flush the exporter."""
        for span in self._open.values():
            span.set_attribute("kv.unfinished", True)
            span.end()
        self._open.clear()
        if self._provider is not None:
            self._provider.shutdown()
            self._provider = None
            self._tracer = None


def _utilisation(choice: Choice | None) -> dict[str, Any]:
    """The utilisation attributes of a choice (see the module docstring)."""
    if choice is None or not choice.candidates:
        return {}
    seen = choice.seen
    out: dict[str, Any] = {
        "kv.candidates.spine": [c.path.spine for c in choice.candidates],
        "kv.candidates.up_util": [float(u) for u in seen[0::4]],
        "kv.candidates.down_util": [float(u) for u in seen[1::4]],
    }
    if choice.path is not None and 0 <= choice.chosen < len(choice.candidates):
        out["kv.utilisation.up"] = float(seen[4 * choice.chosen])
        out["kv.utilisation.down"] = float(seen[4 * choice.chosen + 1])
    return out
