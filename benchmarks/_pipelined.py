"""A lean HTTP/1.1 client for the API benchmarks (the leading underscore keeps this out
of ``kvfabric bench``): requests made up beforehand, written at once (one write per
connection, pipelined), and answers read with a selector, so that the client costs
little of a 2-core machine that also runs the server. And the CPU time of a process,
from the kernel's per-thread scheduler statistics.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import time
from collections.abc import Sequence
from pathlib import Path


def pipelined(
    host: str, port: int, payloads: Sequence[bytes], counts: Sequence[int]
) -> tuple[float, list[float], list[tuple[int, bytes]]]:
    """Write ``payloads[k]`` (``counts[k]`` requests back to back) on connection ``k``;
    return how long the writes took (ms), each answer's time from its connection's write
    (ms), and the answers (status, body) in the order they came."""
    socks = _connections(host, port, len(payloads))
    sent = [0.0] * len(socks)
    t0 = time.perf_counter()
    for k, sock in enumerate(socks):
        sock.sendall(payloads[k])
        sent[k] = time.perf_counter()
    written = (time.perf_counter() - t0) * 1e3
    took: list[float] = []
    answers: list[tuple[int, bytes]] = []
    with selectors.DefaultSelector() as selector:
        for k, sock in enumerate(socks):
            sock.setblocking(False)
            selector.register(sock, selectors.EVENT_READ, k)
        buffers = [b""] * len(socks)
        left = list(counts)
        while any(left):
            events = selector.select(30.0)
            if not events:
                raise SystemExit(f"no answer in 30 s; {sum(left)} of {sum(counts)} left")
            for key, _ in events:
                k = key.data
                at, got, buffers[k] = _read(socks[k], buffers[k])
                took += [(at - sent[k]) * 1e3] * len(got)
                answers += got
                left[k] -= len(got)
    for sock in socks:
        sock.close()
    return written, took, answers


def paced(
    host: str, port: int, requests: Sequence[bytes], connections: int, window_s: float
) -> tuple[list[float], list[float], list[tuple[int, bytes]]]:
    """Send ``requests`` evenly over ``window_s``, round robin over ``connections``
    (request ``i`` at ``i * window_s / len(requests)``, on connection ``i % connections``);
    return each request's send time from the first's and each answer's time from its own
    request's send (ms, in sending order), and the answers (status, body) in that order."""
    socks = _connections(host, port, connections)
    n = len(requests)
    step = window_s / n if n else 0.0
    sent_at = [0.0] * n
    took = [0.0] * n
    answers: list[tuple[int, bytes]] = [(0, b"")] * n
    waiting: list[list[int]] = [[] for _ in socks]  # per connection, requests unanswered
    buffers = [b""] * len(socks)
    left, nxt = n, 0
    with selectors.DefaultSelector() as selector:
        for k, sock in enumerate(socks):
            selector.register(sock, selectors.EVENT_READ, k)
        t0 = time.perf_counter()
        while left:
            now = time.perf_counter()
            while nxt < n and now >= t0 + nxt * step:
                k = nxt % connections
                socks[k].sendall(requests[nxt])
                sent_at[nxt] = time.perf_counter()
                waiting[k].append(nxt)
                nxt += 1
                now = time.perf_counter()
            wait = max(0.0, t0 + nxt * step - now) if nxt < n else 30.0
            events = selector.select(wait)
            if not events and nxt >= n:
                raise SystemExit(f"no answer in 30 s; {left} of {n} left")
            for key, _ in events:
                k = key.data
                at, got, buffers[k] = _read(socks[k], buffers[k])
                for status_body in got:
                    i = waiting[k].pop(0)
                    took[i] = (at - sent_at[i]) * 1e3
                    answers[i] = status_body
                left -= len(got)
    for sock in socks:
        sock.close()
    return [(t - sent_at[0]) * 1e3 for t in sent_at], took, answers


def _connections(host: str, port: int, n: int) -> list[socket.socket]:
    socks = [socket.create_connection((host, port)) for _ in range(n)]
    for sock in socks:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return socks


def _read(sock: socket.socket, buffer: bytes) -> tuple[float, list[tuple[int, bytes]], bytes]:
    """One read from ``sock``: when it came, the whole answers it completed (status,
    body) and what is left of ``buffer`` after them."""
    chunk = sock.recv(1 << 20)
    at = time.perf_counter()
    if not chunk:
        raise SystemExit("the server closed a connection")
    buffer += chunk
    got: list[tuple[int, bytes]] = []
    while (whole := answer(buffer)) is not None:
        status, body, buffer = whole
        got.append((status, body))
    return at, got, buffer


def answer(buf: bytes) -> tuple[int, bytes, bytes] | None:
    """The first whole answer in ``buf``: status, body and what follows; None if partial."""
    head_end = buf.find(b"\r\n\r\n")
    if head_end < 0:
        return None
    head = buf[:head_end].lower()
    at = head.find(b"\r\ncontent-length:") + 17
    stop = head.find(b"\r\n", at)
    length = int(head[at : stop if stop >= 0 else None])
    end = head_end + 4 + length
    if len(buf) < end:
        return None
    return int(buf[9:12]), buf[head_end + 4 : end], buf[end:]


def cpu_s(pid: int) -> float:
    """CPU seconds used so far by every thread of process ``pid`` (from schedstat)."""
    total = 0
    for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        with contextlib.suppress(OSError, ValueError, IndexError):  # a thread that ended
            total += int(stat.read_text().split()[0])
    return total / 1e9


def cpu_times() -> tuple[int, int]:
    """The machine's CPU time so far, all of it and the part stolen by the hypervisor
    (``/proc/stat``, in ticks): on a virtual machine whose host is busy, stolen time
    slows everything measured here, however idle the machine itself is."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    ticks = [int(f) for f in fields[:8]]
    return sum(ticks), ticks[7]
