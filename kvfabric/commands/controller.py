"""``kvfabric controller``: run the controller service for a fabric.

    kvfabric controller [--config] FABRIC.yaml [--p4 p4/kv_fabric.p4 | --p4info F --p4blob F]
                        [--bind HOST:PORT] [--token TOKEN | --token-file F] [--log FILE]
                        [--backup] [--no-audit] [--no-ledger]
                        [--audit-misses N] [--audit-hold DURATION]
                        [--tls-ca F [--tls-cert F --tls-key F]] [--otlp-endpoint URL] [-v]

The fabric file gives the switches, the links and the ``controller:`` settings; the
options here override its API address and token, and its P4Runtime TLS. Prints
``kvfabric controller: API listening on HOST:PORT`` once the API listens, then runs
until SIGTERM or SIGINT. ``--backup`` makes this instance the P4Runtime backup of
another controller of the same fabric; it takes over when the primary dies.
Exit statuses: 0 after a clean stop, 1 for a bad fabric file or program, 2 for a
bad command line.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import sys
from pathlib import Path

from controller.config import FabricConfig, TlsSettings, load_config
from controller.config.units import parse_duration
from controller.errors import ConfigError, ServiceError
from controller.service.main import serve
from controller.service.service import ServiceOptions
from controller.service.southbound.pipeline import compile_program, load_pipeline

DEFAULT_PROGRAM = Path(__file__).resolve().parents[2] / "p4" / "kv_fabric.p4"


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the arguments of ``kvfabric controller``."""
    parser.add_argument("fabric", nargs="?", metavar="FABRIC", help="the fabric YAML file")
    parser.add_argument("--config", metavar="FABRIC", help="the fabric YAML file (same)")
    parser.add_argument("--p4", type=Path, default=None, help="P4 program to compile and push")
    parser.add_argument("--p4info", type=Path, help="prebuilt P4Info (protobuf text)")
    parser.add_argument("--p4blob", type=Path, help="prebuilt device config (with --p4info)")
    parser.add_argument("--bind", metavar="HOST:PORT", help="API address (default: the file's)")
    token = parser.add_mutually_exclusive_group()
    token.add_argument("--token", help="bearer token the API requires")
    token.add_argument("--token-file", type=Path, help="file holding the bearer token")
    parser.add_argument("--log", type=Path, help="JSON-lines transfer log file")
    parser.add_argument("--backup", action="store_true", help="run as the P4Runtime backup")
    parser.add_argument("--no-audit", action="store_true", help="send no link probes")
    parser.add_argument(
        "--no-ledger", action="store_true",
        help="keep no ledger of the transfers in flight on the leaves (nothing is then written "
        "for transfers at all; a restarted controller or a backup adopts none of them)",
    )  # fmt: skip
    parser.add_argument(
        "--audit-misses", type=int, metavar="N",
        help="rounds an idle or counter-frozen link's probe must go unseen before it is "
        "down (default: the file's audit_misses, 2)",
    )  # fmt: skip
    parser.add_argument(
        "--audit-hold", metavar="DURATION",
        help="how long a busy link's probes may go unseen before it is down, unless its "
        "counters show it delivering (default: the file's audit_hold, 2s)",
    )  # fmt: skip
    parser.add_argument("--tls-ca", type=Path, help="CA certificate of the switches (TLS)")
    parser.add_argument("--tls-cert", type=Path, help="client certificate (mutual TLS)")
    parser.add_argument("--tls-key", type=Path, help="client private key (mutual TLS)")
    parser.add_argument("--instance", help="instance tag in transfer ids (default: random)")
    parser.add_argument(
        "--otlp-endpoint", metavar="URL",
        help="send a trace span per transfer to this OTLP/HTTP collector "
        "(http://host:4318; nothing is sent without it)",
    )  # fmt: skip
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")


def _audit_overrides(config: FabricConfig, args: argparse.Namespace) -> FabricConfig:
    """The fabric's settings with ``--audit-misses`` and ``--audit-hold`` applied."""
    c = config.controller
    misses, hold = c.audit_misses, c.audit_hold_s
    if args.audit_misses is not None:
        if args.audit_misses < 1:
            raise ValueError(f"--audit-misses must be at least 1, got {args.audit_misses}")
        misses = args.audit_misses
    if args.audit_hold is not None:
        try:
            hold = parse_duration(args.audit_hold)
        except ValueError as exc:
            raise ValueError(f"--audit-hold: {exc}") from None
    controller = dataclasses.replace(c, audit_misses=misses, audit_hold_s=hold)
    return dataclasses.replace(config, controller=controller)


def _check_otlp(endpoint: str | None) -> None:
    if endpoint is not None and not endpoint.startswith(("http://", "https://")):
        raise ValueError(f"--otlp-endpoint expects an http(s) URL, got {endpoint!r}")


def _bind(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--bind expects HOST:PORT, got {text!r}")
    return host or "127.0.0.1", int(port)


def run(args: argparse.Namespace) -> int:
    """Load the fabric and the pipeline, then serve until stopped."""
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    logging.getLogger("finsy").setLevel(logging.DEBUG if args.verbose else logging.ERROR)
    access = logging.getLogger("kvfabric.controller.access")  # one line per request
    access.setLevel(logging.DEBUG if args.verbose else logging.WARNING)
    fabric = args.config or args.fabric
    if fabric is None:
        print("kvfabric controller: error: a fabric file is required", file=sys.stderr)
        return 2
    if (args.p4info is None) != (args.p4blob is None):
        print("kvfabric controller: error: --p4info and --p4blob go together", file=sys.stderr)
        return 2
    if args.tls_cert is not None and (args.tls_ca is None or args.tls_key is None):
        print(
            "kvfabric controller: error: --tls-cert needs --tls-ca and --tls-key", file=sys.stderr
        )
        return 2
    try:
        config = _audit_overrides(load_config(fabric), args)
        api = config.controller.api
        host, port = _bind(args.bind) if args.bind else (api.host, api.port)
        token = api.token
        _check_otlp(args.otlp_endpoint)
        if args.token is not None:
            token = args.token
        elif args.token_file is not None:
            token = args.token_file.read_text(encoding="utf-8").strip()
        if args.p4info is not None:
            pipeline = load_pipeline(args.p4info, args.p4blob)
        else:
            pipeline = compile_program(args.p4 or DEFAULT_PROGRAM)
    except (ConfigError, ServiceError, ValueError, OSError) as exc:
        print(f"kvfabric controller: error: {exc}", file=sys.stderr)
        return 1
    tls = TlsSettings(args.tls_ca, args.tls_cert, args.tls_key) if args.tls_ca else None
    options = ServiceOptions(
        config=config,
        pipeline=pipeline,
        log_path=args.log,
        backup=args.backup,
        audit=not args.no_audit,
        ledger=not args.no_ledger,
        tls=tls,
        instance=args.instance,
        otlp_endpoint=args.otlp_endpoint,
    )
    try:
        asyncio.run(serve(options, host, port, token))
    except OSError as exc:
        print(f"kvfabric controller: error: {exc}", file=sys.stderr)
        return 1
    return 0
