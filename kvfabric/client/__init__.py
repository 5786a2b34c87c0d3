"""kvfabric.client: what a KV sender calls to get its transfer a path, and report it.

    from kvfabric.client import Client

    client = Client(["10.0.0.1:8080", "10.0.0.2:8080"], token="...")  # primary, backup
    with client.transfer("h11", "h21", nbytes, connect=("10.0.2.1", 7000)) as t:
        t.socket.sendall(kv_bytes)          # DSCP set, source port bound, connected
    print(t.result.placement.placement, t.result.duration_s, t.result.reported)

    with client.transfer("h11", "h21", nbytes) as t:   # a transport with its own sockets
        transport.send(kv_bytes, tos=t.tag.tos if t.tag else 0,
                       src_port=t.tag.src_port if t.tag else 0)

``AsyncClient`` has the same calls, awaited (``async with client.transfer(...)``).
A transfer asks ``POST /v1/transfers``, sets the tag it is given (``IP_TOS`` =
``dscp << 2``, the source port bound), and on a clean exit of the block reports
``POST /v1/transfers/{id}/complete`` with the duration measured from the moment the
path was known; a block left by an exception reports nothing (the controller times
the transfer out). A 503 or a controller that does not answer is retried with
backoff on the next controller (the backup, then the primary again); when none
answers within ``deadline_s`` the transfer goes by plain ECMP, untagged, and its
placement says ``fallback`` and why. A 4xx raises :class:`Refused`. A transfer the
controller holds (its path is busy) waits for its release before the socket connects
(``t.result.wait_s``, ``queued_s``). See ``docs/api.md``.

The implementation is private: ``_core`` (the answers, the errors, the retry and release
policies, both flavours share it), ``_sync`` (:class:`Client`, over ``http.client``) and
``_async`` (:class:`AsyncClient`, over asyncio streams).

Public API::

    Client, AsyncClient, Transfer, AsyncTransfer, Placement, Slice, Tag, Result, Ask,
    ClientError, Refused, Unavailable
"""

from kvfabric.client._async import AsyncClient, AsyncTransfer
from kvfabric.client._core import (
    Ask,
    ClientError,
    Placement,
    Refused,
    Result,
    Slice,
    Tag,
    Transfer,
    Unavailable,
)
from kvfabric.client._sync import Client

__all__ = [
    "Ask",
    "AsyncClient",
    "AsyncTransfer",
    "Client",
    "ClientError",
    "Placement",
    "Refused",
    "Result",
    "Slice",
    "Tag",
    "Transfer",
    "Unavailable",
]
