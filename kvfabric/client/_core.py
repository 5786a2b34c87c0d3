"""What both flavours of the client share: the answers, the errors, the retry policy.

The policy is pure: :class:`Attempts` says, for each attempt's outcome, whether to
try again and where and after how long, and never sleeps or touches the network.
:class:`BaseClient` holds what both clients are configured with, and
:func:`transfer_request` and :class:`Transfer` are the same for both. The flavours
(:mod:`._sync`, :mod:`._async`) only do the I/O: send, receive, sleep, connect.

- 503 (not ready, or the backup of a switch the request needs; the backup takes
  over within a second or so), any other 5xx, and a connection refused, reset or
  timed out: try
  the next controller of ``endpoints`` (primary, then backup, round and round),
  after a backoff that doubles from ``backoff_s`` up to ``max_backoff_s`` (a
  ``Retry-After`` caps it, as it says when to come back);
- any other 4xx: the request itself is wrong; :class:`Refused` at once;
- no answer within ``deadline_s``: for a path, the ECMP fallback (the design's:
  the sender must not wait for a controller); for a completion, it is dropped and
  the result says so (the controller times the transfer out).

A transfer the controller *holds* (its answer says ``held``: its path is busy) starts
only when ``GET /v1/transfers/{id}/start`` answers ``released``: :class:`Release` is
that wait's policy, a long poll asked again until the release, bounded by the
answer's ``wait_ms`` plus ``release_slack_s``; past the bound, or when no controller
answers, the sender starts anyway and the result says why.

Errors::

    ClientError
     +-- Refused          a 4xx: the request is wrong (unknown host, bad field, ...)
     +-- Unavailable      no controller answered in time (a completion's report only;
                          a path falls back to ECMP instead)
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


class ClientError(Exception):
    """Everything the client raises."""


class Refused(ClientError):
    """The controller refused the request (4xx): retrying would not help."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message


class Unavailable(ClientError):
    """No controller answered within the deadline."""


SocketFactory = Callable[[], socket.socket]


def tcp_socket() -> socket.socket:
    """A new TCP socket (the default of ``transfer(..., sockets=)``)."""
    return socket.socket(socket.AF_INET, socket.SOCK_STREAM)


@dataclass(frozen=True, slots=True)
class Tag:
    """What the sender sets: the IP DSCP (``tos`` = ``dscp << 2`` for ``IP_TOS``) and
    the L4 source port to bind."""

    dscp: int
    tos: int
    src_port: int


@dataclass(frozen=True, slots=True)
class Slice:
    """One slice of a transfer split over spines: one tagged connection of its own,
    carrying ``bytes`` bytes of the KV cache from ``offset`` on."""

    spine: str
    path: str
    bytes: int
    tag: Tag
    offset: int = 0


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a transfer goes.

    ``placement`` is ``pinned`` (on ``spine``), ``ecmp`` (the controller answered but
    did not pin it; ``fallbacks`` says why), ``local`` (within a rack) or
    ``fallback``: no controller answered within the deadline, the transfer goes by
    plain ECMP with no tag, and ``fallbacks`` says why. ``transfer_id`` is None only
    for ``fallback``. ``slices``: a pinned transfer split over spines, one tagged
    connection each (the first is ``spine``, ``path`` and ``tag``); one when it is not
    split, none when it is not pinned.
    """

    transfer_id: str | None
    placement: str
    spine: str | None = None
    path: str | None = None
    tag: Tag | None = None
    fallbacks: tuple[str, ...] = ()
    controller: str | None = None
    held: bool = False
    wait_s: float = 0.0
    start_at: float | None = None
    slices: tuple[Slice, ...] = ()

    @property
    def fell_back(self) -> bool:
        """True when no controller answered and the transfer goes by plain ECMP."""
        return self.placement == "fallback"

    @classmethod
    def from_answer(cls, answer: Mapping[str, Any], controller: str) -> Placement:
        """The placement of a ``POST /v1/transfers`` answer (``docs/openapi.json``'s
        ``TransferAnswer``)."""
        tag = answer.get("tag")
        path = answer.get("path")
        return cls(
            transfer_id=str(answer["id"]),
            placement=str(answer.get("placement") or ("pinned" if path else "ecmp")),
            spine=answer.get("spine") or _spine_of(path),
            path=path,
            tag=_tag(tag) if tag else None,
            fallbacks=tuple(answer.get("fallbacks") or ()),
            controller=controller,
            held=bool(answer.get("held")),
            wait_s=float(answer.get("wait_ms") or 0.0) / 1e3,
            start_at=answer.get("start_at"),
            slices=_slices(answer.get("slices") or ()),
        )

    @classmethod
    def fallback(cls, why: Unavailable) -> Placement:
        """Plain ECMP, untagged: no controller answered in time."""
        return cls(None, "fallback", fallbacks=(f"no controller answered: {why}",))


def _spine_of(path: object) -> str | None:
    """The spine of a path written ``leaf1>spine2>leaf2``."""
    parts = path.split(">") if isinstance(path, str) else []
    return parts[1] if len(parts) == 3 else None


def _slices(rows: Any) -> tuple[Slice, ...]:
    """The slices of an answer, each with its offset in the KV bytes (their order)."""
    out: list[Slice] = []
    offset = 0
    for row in rows:
        nbytes = int(row["bytes"])
        out.append(Slice(str(row["spine"]), str(row["path"]), nbytes, _tag(row["tag"]), offset))
        offset += nbytes
    return tuple(out)


def _tag(tag: Mapping[str, Any]) -> Tag:
    dscp = int(tag["dscp"])
    return Tag(dscp, int(tag.get("tos", dscp << 2)), int(tag["src_port"]))


@dataclass(slots=True)
class Result:
    """How a transfer made with ``client.transfer(...)`` went.

    ``duration_s`` runs from the moment the path is known and the transfer may start
    (and the socket, when the client opened one, connected) to the end of the ``with``
    block. ``wait_s`` is the time spent waiting for a held transfer's release,
    ``queued_s`` the time from the path request to the start (``decision_s`` plus
    ``wait_s``); ``release_error`` says why a held transfer started without its release.
    ``reported`` says whether the controller recorded the completion; ``report_error``
    why not.
    """

    placement: Placement
    decision_s: float
    duration_s: float | None = None
    reported: bool = False
    report_error: str | None = None
    wait_s: float = 0.0
    queued_s: float = 0.0
    release_error: str | None = None


Socket = socket.socket


class TransferBase:
    """What both flavours' transfers share (see :class:`Transfer`)."""

    def __init__(self, placement: Placement, result: Result) -> None:
        self.placement = placement
        self.result = result
        self.sockets: list[Socket] = []

    @property
    def socket(self) -> Socket | None:
        """The first (or only) connected socket, None when the client connected none."""
        return self.sockets[0] if self.sockets else None

    @socket.setter
    def socket(self, sock: Socket | None) -> None:
        self.sockets = [sock] if sock is not None else []

    @property
    def tag(self) -> Tag | None:
        """The placement's tag (None: no tag, plain ECMP)."""
        return self.placement.tag

    def parts(self, data: bytes | memoryview) -> list[tuple[Socket, memoryview]]:
        """Each connected socket with the part of ``data`` its slice carries: split in
        the slices' proportions (their bytes when ``data`` is the transfer's size)."""
        return list(zip(self.sockets, split_data(self.placement, data, len(self.sockets)),
                        strict=True))  # fmt: skip

    def close_sockets(self) -> None:
        """Close every socket the client connected."""
        for sock in self.sockets:
            if sock.fileno() != -1:
                sock.close()

    def released(self, release: Release, wait_s: float) -> None:
        """Record the wait for the release (``wait_s`` long)."""
        self.result.wait_s = wait_s
        self.result.queued_s = self.result.decision_s + wait_s
        self.result.release_error = release.error

    def reported(self, error: ClientError | None) -> None:
        """Record how the completion's report went (``error`` None: recorded)."""
        self.result.reported = error is None
        self.result.report_error = None if error is None else str(error)


class Transfer(TransferBase):
    """The transfer inside ``with client.transfer(...) as t``: ``t.socket`` (when the
    client connected one), ``t.tag`` (what to set on a connection of one's own, None
    for plain ECMP), ``t.placement``, and ``t.result`` once the block is left.

    A transfer the controller split over spines has one connection per slice:
    ``t.sockets`` (the first is ``t.socket``), and :meth:`parts` pairs each with its
    slice's share of the bytes; :meth:`sendall` sends them all at once. A transport
    that opens its own connections sets each slice's tag: ``t.placement.slices``."""

    def sendall(self, data: bytes | memoryview) -> None:
        """Send ``data`` over the connected sockets, each its slice's part, all at once
        (one thread per slice beyond the first); the first error is raised."""
        parts = self.parts(data)
        if len(parts) == 1:
            parts[0][0].sendall(parts[0][1])
            return
        errors: list[BaseException] = []

        def send(sock: Socket, part: memoryview) -> None:
            try:
                sock.sendall(part)
            except OSError as exc:
                errors.append(exc)

        threads = [threading.Thread(target=send, args=part, daemon=True) for part in parts[1:]]
        for thread in threads:
            thread.start()
        send(*parts[0])
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One controller's API address."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


def endpoints_of(addresses: Sequence[str | tuple[str, int]]) -> tuple[Endpoint, ...]:
    """``["127.0.0.1:8080", ("backup", 8080)]`` as endpoints, in order."""
    out = []
    for a in addresses:
        if isinstance(a, str):
            host, sep, port = a.rpartition(":")
            if not sep or not port.isdigit():
                raise ValueError(f"a controller address is HOST:PORT, got {a!r}")
            out.append(Endpoint(host or "127.0.0.1", int(port)))
        else:
            out.append(Endpoint(a[0], int(a[1])))
    if not out:
        raise ValueError("the client needs at least one controller address")
    return tuple(out)


@dataclass(slots=True)
class Attempts:
    """The retry policy of one call (see the module docstring); pure."""

    endpoints: tuple[Endpoint, ...]
    deadline: float
    budget_s: float
    """The deadline's length, for the error (:class:`Unavailable`)."""
    backoff_s: float = 0.005
    max_backoff_s: float = 0.2
    current: int = 0
    tries: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def endpoint(self) -> Endpoint:
        """Where the next attempt goes."""
        return self.endpoints[self.current]

    def left(self, now: float) -> float:
        """Seconds left before the deadline."""
        return self.deadline - now

    def timeout(self, now: float) -> float:
        """How long the next attempt may wait for its answer."""
        return max(self.left(now), 0.001)

    def settle(self, reply: Reply | str, now: float) -> tuple[Any, Endpoint] | float:
        """The outcome of the attempt at :attr:`endpoint`: its answer (decoded) and
        endpoint, or the pause before the next attempt. ``reply`` is what the
        controller answered, or why it did not (a str). :class:`Refused` for a 4xx,
        :class:`Unavailable` when there is no time left for another attempt."""
        if isinstance(reply, str):
            pause = self.failed(reply, now)
        elif reply.status < 500:
            return decode_answer(reply.status, reply.payload), self.endpoint
        else:
            why = f"HTTP {reply.status}: {reply.payload[:200].decode('utf-8', 'replace')}"
            pause = self.failed(why, now, retry_after(reply.headers.get("retry-after")))
        if pause is None:
            raise Unavailable(f"in {self.budget_s:g}s: {self.summary()}")
        return pause

    def failed(self, why: str, now: float, retry_after_s: float | None = None) -> float | None:
        """Record a failed attempt; the pause before the next one, None when out of time.
        The next attempt goes to the next endpoint."""
        self.errors.append(f"{self.endpoint}: {why}")
        self.tries += 1
        self.current = (self.current + 1) % len(self.endpoints)
        pause = min(self.max_backoff_s, self.backoff_s * float(2 ** (self.tries - 1)))
        if self.current != 0:
            pause = 0.0  # the next controller at once; back off once round them all
        if retry_after_s is not None:
            pause = min(pause, retry_after_s)
        if self.left(now) <= pause:
            return None
        return pause

    def summary(self) -> str:
        """What went wrong, last attempts first (for a fallback or an error)."""
        shown = self.errors[-3:][::-1]
        more = f" (and {len(self.errors) - 3} more)" if len(self.errors) > 3 else ""
        return "; ".join(shown) + more


@dataclass(frozen=True, slots=True)
class Reply:
    """A controller's answer: status, lower-case headers, body."""

    status: int
    headers: dict[str, str]
    payload: bytes


RELEASE_SLACK_S = 1.0
"""How much longer than the answer's ``wait_ms`` a sender waits for its release."""

POLL_SLACK_S = 0.5
"""How much longer than its ``timeout_ms`` one long poll may take to be answered."""

MAX_POLL_MS = 60_000
"""The longest ``timeout_ms`` the controller takes."""


class BaseClient:
    """What both clients are configured with (the options are described on
    :class:`kvfabric.client.Client`), and the retry policy of their calls."""

    def __init__(
        self,
        controllers: Sequence[str | tuple[str, int]],
        *,
        token: str | None = None,
        deadline_s: float = 0.25,
        backoff_s: float = 0.005,
        clock: Callable[[], float] = time.monotonic,
        release_slack_s: float = RELEASE_SLACK_S,
    ) -> None:
        self.endpoints: tuple[Endpoint, ...] = endpoints_of(controllers)
        self.token = token
        self.deadline_s = deadline_s
        self.backoff_s = backoff_s
        self.clock = clock
        self.release_slack_s = release_slack_s
        self._reset()

    def _reset(self) -> None:
        """Start with no connection (each flavour keeps its own kind)."""
        raise NotImplementedError

    def attempts(self, deadline_s: float | None = None) -> Attempts:
        """The retry policy of a call starting now (``deadline_s``: the client's)."""
        budget = self.deadline_s if deadline_s is None else deadline_s
        return Attempts(self.endpoints, self.clock() + budget, budget, self.backoff_s)


@dataclass(slots=True)
class Release:
    """The wait for a held transfer's release (see the module docstring); pure.

    :meth:`next` says which long poll to send and how long its call may take, None
    when the wait is over (released, out of time, or failed: ``error`` says why);
    :meth:`settle` takes each poll's answer, or the :class:`ClientError` it raised.
    """

    transfer_id: str | None
    deadline: float
    done: bool = False
    error: str | None = None

    @classmethod
    def of(cls, placement: Placement, now: float, slack_s: float = RELEASE_SLACK_S) -> Release:
        """The wait of ``placement``'s transfer (over at once when it is not held)."""
        held = placement.held and placement.transfer_id is not None
        return cls(placement.transfer_id, now + placement.wait_s + slack_s, done=not held)

    def next(self, now: float) -> tuple[str, float] | None:
        """The next poll's path and its call's deadline in seconds; None when over."""
        if self.done:
            return None
        left = self.deadline - now
        if left <= 0:
            self.done = True
            self.error = "no release in time: started without it"
            return None
        timeout_ms = min(MAX_POLL_MS, max(1, int(left * 1e3)))
        path = f"/v1/transfers/{self.transfer_id}/start?timeout_ms={timeout_ms}"
        return path, timeout_ms / 1e3 + POLL_SLACK_S

    def settle(self, answer: Any) -> None:
        """One poll's answer (a :class:`ClientError`: the wait ends, started anyway)."""
        if isinstance(answer, ClientError):
            self.done = True
            self.error = f"the release could not be asked: {answer}"
        elif isinstance(answer, Mapping) and answer.get("released"):
            self.done = True


def transfer_request(
    src: str,
    dst: str,
    nbytes: int,
    spine: str | None,
    trace_id: str | None,
    *,
    deadline_ms: int | None = None,
) -> dict[str, object]:
    """The body of ``POST /v1/transfers``."""
    body: dict[str, object] = {"src": src, "dst": dst, "bytes": nbytes}
    for key, value in (("spine", spine), ("trace_id", trace_id), ("deadline_ms", deadline_ms)):
        if value is not None:
            body[key] = value
    return body


@dataclass(frozen=True, slots=True)
class Ask:
    """One transfer of a batch (:meth:`Client.transfers <kvfabric.client.Client.transfers>`):
    the fields of ``POST /v1/transfers``."""

    src: str
    dst: str
    nbytes: int
    spine: str | None = None
    trace_id: str | None = None
    deadline_ms: int | None = None


def batch_request(asks: Sequence[Ask]) -> dict[str, object]:
    """The body of ``POST /v1/transfers/batch``."""
    return {
        "transfers": [
            transfer_request(a.src, a.dst, a.nbytes, a.spine, a.trace_id, deadline_ms=a.deadline_ms)
            for a in asks
        ]
    }


def batch_placements(
    answer: Mapping[str, Any], controller: str, count: int
) -> list[Placement | Refused]:
    """Each member's placement, or its refusal (the status and error of its answer), in
    order."""
    rows = answer.get("transfers") if isinstance(answer, Mapping) else None
    if not isinstance(rows, list) or len(rows) != count:
        raise ClientError(f"a batch of {count} was answered with {answer!r:.200}")
    out: list[Placement | Refused] = []
    for row in rows:
        if isinstance(row, Mapping) and "error" in row:
            out.append(Refused(int(row.get("status") or 422), str(row["error"])))
        else:
            out.append(Placement.from_answer(row, controller))
    return out


def request_bytes(
    method: str, path: str, body: object, endpoint: Endpoint, token: str | None
) -> tuple[bytes, dict[str, str]]:
    """The body and headers of one request."""
    data = b"" if body is None else json.dumps(body).encode()
    headers = {"Host": str(endpoint), "Accept": "application/json"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return data, headers


def decode_answer(status: int, payload: bytes) -> Any:
    """The JSON of an answer (None when empty); :class:`Refused` for a 4xx."""
    text = payload.decode("utf-8", "replace")
    try:
        value = json.loads(text) if text.strip() else None
    except json.JSONDecodeError:
        value = None
    if 400 <= status < 500:
        message = value.get("error", text) if isinstance(value, dict) else text
        raise Refused(status, str(message)[:500])
    return value


def retry_after(value: str | None) -> float | None:
    """A ``Retry-After`` header in seconds (dates are not used by the controller)."""
    if value is None or not value.strip().isdigit():
        return None
    return float(value.strip())


def split_data(placement: Placement, data: bytes | memoryview, count: int) -> list[memoryview]:
    """``data`` in ``count`` contiguous parts, in the proportions of the placement's
    slices (all of it in one part when it has fewer than two)."""
    view = memoryview(data)
    slices = placement.slices
    if count <= 1 or len(slices) < 2:
        return [view] if count >= 1 else []
    total = sum(s.bytes for s in slices[:count]) or 1
    parts: list[memoryview] = []
    start = 0
    for k, sl in enumerate(slices[:count]):
        end = len(view) if k == count - 1 else start + len(view) * sl.bytes // total
        parts.append(view[start:end])
        start = end
    return parts


def connections_of(placement: Placement) -> list[Placement]:
    """One placement per connection to open: each slice's, as a placement of its own
    (its tag), or the placement itself when it is not split."""
    if len(placement.slices) < 2:
        return [placement]
    return [
        Placement(placement.transfer_id, placement.placement, s.spine, s.path, s.tag)
        for s in placement.slices
    ]


@contextmanager
def tagged_socket(
    sockets: SocketFactory, placement: Placement, bind: tuple[str, int] | None
) -> Iterator[socket.socket]:
    """A new socket with the placement's tag (see :func:`tag_socket`), closed if the
    block (that connects it) fails."""
    sock = sockets()
    try:
        tag_socket(sock, placement, bind)
        yield sock
    except BaseException:
        sock.close()
        raise


def tag_socket(sock: socket.socket, placement: Placement, bind: tuple[str, int] | None) -> None:
    """Set the DSCP and bind the source port the placement's tag says (or ``bind``'s
    address and port when there is no tag: plain ECMP)."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    address, port = bind if bind is not None else ("0.0.0.0", 0)
    if placement.tag is not None:
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, placement.tag.tos)
        port = placement.tag.src_port
    if port or bind is not None:
        sock.bind((address, port))
