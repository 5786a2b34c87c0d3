"""``kvfabric switch-cli``: simple_switch_CLI's client side, for a running ``kvfabric switch``.

    kvfabric switch-cli [--thrift-port N] [--thrift-ip HOST] [--json F] [--pre P] < COMMANDS

Reads BMv2 runtime-CLI commands from stdin, one a line (``#`` starts a
comment), sends each over the switch's control channel (see
:mod:`softswitch.switch.control`; the switch opens it with ``--thrift-port``)
and prints the output, as ``simple_switch_CLI`` does when the tutorials pipe a
commands file into it.  On a terminal it prompts ``RuntimeCmd:``.  ``--json``
and ``--pre`` are accepted with a note: the switch knows its program.  The exit
status is 0 if every command succeeded, 1 otherwise (BMv2's CLI exits 0
whatever happens; failing loudly is kinder to scripts).
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
from typing import TextIO

PROMPT = "RuntimeCmd: "


def configure(parser: argparse.ArgumentParser) -> None:
    """Add simple_switch_CLI's arguments."""
    parser.add_argument("--thrift-port", type=int, default=9090, help="control channel port")
    parser.add_argument("--thrift-ip", default="127.0.0.1", help="the switch's address")
    parser.add_argument(
        "--json", metavar="F", help="accepted, ignored: the switch knows its program"
    )
    parser.add_argument("--pre", metavar="P", help="accepted, ignored: one PRE (SimplePreLAG)")


class Channel:
    """One connection to a switch's control channel."""

    def __init__(self, host: str, port: int, timeout: float = 30.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.file = self.sock.makefile("rwb")

    def run(self, command: str) -> tuple[bool, str]:
        """Send one command; (ok, output or error text)."""
        self.file.write(json.dumps({"command": command}).encode() + b"\n")
        self.file.flush()
        line = self.file.readline()
        if not line:
            raise ConnectionError("the switch closed the control channel")
        reply = json.loads(line)
        if reply.get("ok"):
            return True, str(reply.get("output", ""))
        return False, str(reply.get("error", "error"))

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def session(channel: Channel, stdin: TextIO, stdout: TextIO, interactive: bool) -> int:
    """Run every command of ``stdin``; 0 if all succeeded, else 1."""
    status = 0
    while True:
        if interactive:
            stdout.write(PROMPT)
            stdout.flush()
        line = stdin.readline()
        if not line:
            break
        command = line.strip()
        if not command or command.startswith("#"):
            continue
        if command in ("exit", "quit", "EOF"):
            break
        ok, text = channel.run(command)
        if text:
            print(text, file=stdout if ok else sys.stderr, flush=True)
        if not ok:
            status = 1
    return status


def run(args: argparse.Namespace) -> int:
    """Connect and run stdin's commands."""
    for option in ("json", "pre"):
        if getattr(args, option) is not None:
            print(f"note: --{option} ignored: the switch knows its program", file=sys.stderr)
    try:
        channel = Channel(args.thrift_ip, args.thrift_port)
    except OSError as exc:
        print(
            f"Could not connect to the switch's control channel on "
            f"{args.thrift_ip}:{args.thrift_port}: {exc.strerror or exc} "
            f"(start `kvfabric switch` with --thrift-port {args.thrift_port})",
            file=sys.stderr,
        )
        return 1
    try:
        return session(channel, sys.stdin, sys.stdout, sys.stdin.isatty())
    except (OSError, ValueError) as exc:
        print(f"control channel: {exc}", file=sys.stderr)
        return 1
    finally:
        channel.close()
