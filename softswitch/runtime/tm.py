"""Traffic manager queue model (STUB: signatures final)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class QueueTicket:
    port: int
    enq_timestamp: int
    enq_qdepth: int
    deq_timedelta: int
    deq_qdepth: int


class TrafficManager:
    def __init__(self, default_depth: int = 64, default_rate_pps: int = 0) -> None:
        pass

    def set_queue_depth(self, depth: int, port: int | None = None) -> None:
        raise NotImplementedError

    def set_queue_rate(self, rate_pps: int, port: int | None = None) -> None:
        raise NotImplementedError

    def enqueue(self, port: int, now_us: int) -> QueueTicket | None:
        raise NotImplementedError
