"""The switch's control channel: simple_switch_CLI's commands as JSON lines over TCP.

BMv2's ``simple_switch_CLI`` talks Thrift to the switch's ``--thrift-port``.
This target listens on that port (127.0.0.1 only: the channel has no
authentication) for a simpler protocol, one JSON object per line each way::

    -> {"command": "table_add MyIngress.ipv4_lpm ipv4_forward 10.0.1.1/32 => 00:00:00:00:01:01 1"}
    <- {"ok": true, "output": "Adding entry to lpm match table ..."}
    <- {"ok": false, "error": "Invalid table_add operation (NOT_FOUND): ..."}

Commands are :class:`softswitch.switch.runtime_cli.RuntimeCli`'s.  The server
runs on the switch's event loop, so a command never runs while a packet is
processed.  A request that is not a JSON object with a string ``command``, or a
line over :data:`MAX_LINE` bytes, gets ``ok: false`` (the oversized line closes
the connection).  ``kvfabric switch-cli`` (installed as ``simple_switch_CLI`` by
``kvfabric bmv2-shims``) is the client.

``set_queue_rate``/``set_queue_depth`` go to the switch's traffic manager
(:class:`softswitch.switch.packet_path.Switch`), which, as BMv2's, belongs to
the switch and keeps its settings across pipeline changes; ``show_ports`` and
``set_port_speed`` to its ports (:class:`softswitch.switch.interfaces.Interfaces`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable

from softswitch.errors import SoftswitchError
from softswitch.runtime.state import RuntimeState
from softswitch.switch.interfaces import Interfaces
from softswitch.switch.runtime_cli import CliError, QueueControl, RuntimeCli

LOG = logging.getLogger("kvfabric.switch.control")
MAX_LINE = 64 * 1024
HOST = "127.0.0.1"


def handle_request(cli: RuntimeCli, line: bytes) -> dict[str, object]:
    """One request line -> the reply object."""
    try:
        request = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return {"ok": False, "error": f"not a JSON line: {exc}"}
    command = request.get("command") if isinstance(request, dict) else None
    if not isinstance(command, str):
        return {"ok": False, "error": 'expected {"command": "<CLI command line>"}'}
    try:
        return {"ok": True, "output": cli.run(command)}
    except (CliError, SoftswitchError) as exc:
        return {"ok": False, "error": str(exc)}


async def start_control_server(
    port: int,
    state_of: Callable[[], RuntimeState | None],
    queues: QueueControl,
    ports: Interfaces | None = None,
) -> asyncio.Server:
    """Listen on 127.0.0.1:``port`` (0: any free port; see ``server.sockets``)."""
    cli = RuntimeCli(state_of, queues, ports)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    line = await reader.readuntil(b"\n")
                except asyncio.IncompleteReadError as exc:
                    line = exc.partial
                    if not line.strip():
                        return
                except asyncio.LimitOverrunError:
                    reply = {"ok": False, "error": f"request line over {MAX_LINE} bytes"}
                    writer.write(json.dumps(reply).encode() + b"\n")
                    await writer.drain()
                    return
                if not line.strip():
                    continue
                reply = handle_request(cli, line)
                writer.write(json.dumps(reply).encode() + b"\n")
                await writer.drain()
        except ConnectionError:
            return
        finally:
            writer.close()

    try:
        server = await asyncio.start_server(serve, HOST, port, limit=MAX_LINE)
    except OSError as exc:
        raise SoftswitchError(
            f"--thrift-port {port}: cannot listen on {HOST}:{port}: {exc.strerror}"
        ) from None
    LOG.info("control channel (simple_switch_CLI) on %s:%d", HOST, port)
    return server
