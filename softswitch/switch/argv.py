"""simple_switch_grpc's command line, parsed into a frozen :class:`SwitchOptions`.

The grammar is BMv2's, so launchers written for ``simple_switch_grpc`` (p4lang
tutorials, finsy's demonet, p4-utils, Mininet switch classes) only change the
binary name::

    [-i PORT@IFACE]... [--device-id N] [--log-console | --log-file F] [-L LEVEL]
    [--pcap [DIR]] [--thrift-port N] [--nanolog ADDR] [--dump-packet-data N]
    [--load-modules FILE.py[,FILE.py...]]
    [--queue-rate [PORT:]PPS]... [--queue-depth [PORT:]N]... [--offloads MODE]
    [--send-buffer BYTES] [--port-speed [PORT:]RATE]... [PROGRAM | --no-p4]
    [-- --grpc-server-addr HOST:PORT --cpu-port N --drop-port N --grpc-server-ssl
        --grpc-server-cacert F --grpc-server-cert F --grpc-server-key F
        --grpc-server-with-client-auth --priority-queues N]

Options may stand before or after the positional program and ``--opt=value``
works for every option that takes a value.  Target options (after ``--``) are
BMv2's ``simple_switch_grpc`` target options.  Options that make no sense for
this target (nanolog, the debugger) are accepted and produce one warning
line each, kept in :attr:`SwitchOptions.warnings`.

``--load-modules FILES`` (comma-separated, repeatable) loads the extern
functions that programs declare for themselves, as BMv2 loads ``.so`` modules:
here they are Python files (see :mod:`softswitch.interp.extern_funcs`).

``--thrift-port N`` opens the control channel of ``simple_switch_CLI`` on
127.0.0.1:N (JSON lines, not Thrift: see :mod:`softswitch.switch.control`);
without it there is none.

Logging is BMv2's: nothing unless ``--log-console`` or ``--log-file F``, at
``-L``/``--log-level`` (trace by default, as simple_switch_grpc's).  At trace or
debug the log shows each packet's way through the pipeline in simple_switch's
words (:mod:`softswitch.interp.trace`); at info and above, and without a log,
the pipeline carries no trace code at all.

Additions of this target:

``--queue-rate [PORT:]PPS``
    the traffic manager's egress rate in packets per second for one port, or for
    every port without ``PORT:`` (BMv2's ``set_queue_rate``); repeatable.
``--queue-depth [PORT:]N``
    the egress queue depth in packets (BMv2's ``set_queue_depth``); repeatable.
``--send-buffer BYTES``
    the ports' socket send buffer.  By default it is the kernel's, as BMv2's: a
    port whose link is slower than the traffic fills it, and then its packets wait
    in the switch's egress queue (backpressure), where P4 sees the queue depth.  A
    larger buffer lets a kernel queue (a qdisc with a packet limit) be the buffer.
``--offloads disable|refuse|keep``
    what to do with checksum and segmentation offloads of the named interfaces:
    turn them off (default), refuse to start, or leave them.
``--port-speed [PORT:]RATE``
    the speed port ``PORT`` (every port without ``PORT:``) is provisioned at, as its
    gNMI ``port-speed`` reports it (:mod:`softswitch.switch.interfaces`): ``400G``,
    ``20Mbps``, a number of bit/s or an OpenConfig name (``SPEED_100GB``); repeatable.
    A port without one reports what the kernel says of its interface.

``--priority-queues N`` (1 to 8) gives every port N egress queues; as in
simple_switch, ``standard_metadata.priority`` p goes to queue N-1-p (a larger p is
served first) and a packet whose p is N or more is dropped.

The program may be a ``.p4`` source file or the device config written by
``kvfabric compile -o``.  A bad command line raises :class:`UsageError`; the
command prints it and the usage and exits with status 2.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from softswitch.errors import SoftswitchError
from softswitch.switch.interfaces import SpeedError, parse_rate

USAGE = """\
usage: kvfabric switch [-i PORT@IFACE]... [--device-id N] [--log-console | --log-file F]
                       [-L LEVEL] [--pcap [DIR]] [--dump-packet-data N]
                       [--load-modules FILE.py[,FILE.py...]]
                       [--queue-rate [PORT:]PPS]... [--queue-depth [PORT:]N]...
                       [--offloads disable|refuse|keep] [--send-buffer BYTES]
                       [--port-speed [PORT:]RATE]... [PROGRAM | --no-p4]
                       [-- [--grpc-server-addr HOST:PORT] [--cpu-port N] [--drop-port N]
                           [--grpc-server-ssl] [--grpc-server-cacert F] [--grpc-server-cert F]
                           [--grpc-server-key F] [--grpc-server-with-client-auth]
                           [--priority-queues N]]"""

LOG_LEVELS = ("trace", "debug", "info", "warn", "error", "off")
OffloadMode = Literal["disable", "refuse", "keep"]


class UsageError(SoftswitchError):
    """A command line that does not follow the grammar."""


@dataclass(frozen=True, slots=True)
class TlsOptions:
    """The gRPC server's TLS material (PEM file paths)."""

    cert: str
    key: str
    cacert: str | None = None
    with_client_auth: bool = False


@dataclass(frozen=True, slots=True)
class SwitchOptions:
    """Everything the command line says; defaults are BMv2's."""

    program: str | None = None
    no_p4: bool = False
    interfaces: tuple[tuple[int, str], ...] = ()
    device_id: int = 0
    log_console: bool = False
    log_file: str | None = None
    log_level: str = "trace"
    pcap_dir: str | None = None
    dump_packet_data: int = 0
    queue_rates: tuple[tuple[int | None, int], ...] = ()
    queue_depths: tuple[tuple[int | None, int], ...] = ()
    port_speeds: tuple[tuple[int | None, int], ...] = ()
    offloads: OffloadMode = "disable"
    send_buffer: int | None = None
    grpc_addr: str = "0.0.0.0:9559"
    cpu_port: int | None = None
    drop_port: int = 511
    tls: TlsOptions | None = None
    priority_queues: int = 1
    thrift_port: int | None = None
    modules: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    show_help: bool = False
    show_version: bool = False


@dataclass(slots=True)
class _Builder:
    values: dict[str, Any] = field(default_factory=dict)
    interfaces: list[tuple[int, str]] = field(default_factory=list)
    queue_rates: list[tuple[int | None, int]] = field(default_factory=list)
    queue_depths: list[tuple[int | None, int]] = field(default_factory=list)
    port_speeds: list[tuple[int | None, int]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    positionals: list[str] = field(default_factory=list)
    modules: list[str] = field(default_factory=list)
    tls: dict[str, Any] = field(default_factory=dict)


def _int(option: str, text: str, low: int = 0, high: int = 2**64 - 1) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise UsageError(f"{option}: expected an integer, got {text!r}") from None
    if not low <= value <= high:
        raise UsageError(f"{option}: {value} is out of range [{low}, {high}]")
    return value


def _interface(option: str, text: str) -> tuple[int, str]:
    port, sep, iface = text.partition("@")
    if not sep or not iface:
        raise UsageError(f"{option}: expected PORT@IFACE, got {text!r}")
    if len(iface) > 15:
        raise UsageError(f"{option}: interface name {iface!r} is longer than 15 characters")
    return _int(option, port, 0, 511), iface


def _port_value(option: str, text: str) -> tuple[int | None, int]:
    port, sep, value = text.rpartition(":")
    if not sep:
        return None, _int(option, text, 0)
    return _int(option, port, 0, 511), _int(option, value, 0)


def _port_speed(option: str, text: str) -> tuple[int | None, int]:
    port, sep, rate = text.partition(":")
    if not sep or not port.strip().isdigit():
        port, rate = "", text  # every port (an OpenConfig name may carry its module's prefix)
    try:
        bps = parse_rate(rate)
    except SpeedError as exc:
        raise UsageError(f"{option}: {exc}") from None
    return (_int(option, port, 0, 511) if port else None), bps


def _grpc_addr(option: str, text: str) -> str:
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise UsageError(f"{option}: expected HOST:PORT, got {text!r}")
    _int(option, port, 0, 65535)
    return text


def _set(key: str) -> Callable[[_Builder, str, str], None]:
    def apply(b: _Builder, option: str, value: str) -> None:
        b.values[key] = value

    return apply


def _set_int(key: str, low: int = 0, high: int = 2**64 - 1) -> Callable[[_Builder, str, str], None]:
    def apply(b: _Builder, option: str, value: str) -> None:
        b.values[key] = _int(option, value, low, high)

    return apply


def _warn(reason: str) -> Callable[[_Builder, str, str], None]:
    def apply(b: _Builder, option: str, value: str) -> None:
        b.warnings.append(f"warning: {option} ignored: {reason}")

    return apply


def _log_level(b: _Builder, option: str, value: str) -> None:
    if value not in LOG_LEVELS:
        raise UsageError(f"{option}: level must be one of {', '.join(LOG_LEVELS)}; got {value!r}")
    b.values["log_level"] = value


def _offloads(b: _Builder, option: str, value: str) -> None:
    if value not in ("disable", "refuse", "keep"):
        raise UsageError(f"{option}: expected disable, refuse or keep; got {value!r}")
    b.values["offloads"] = value


def _tls(key: str) -> Callable[[_Builder, str, str], None]:
    def apply(b: _Builder, option: str, value: str) -> None:
        b.tls[key] = value

    return apply


_Handler = Callable[[_Builder, str, str], None]

# Options that take a value: name -> handler(builder, option, value).
_MAIN_VALUED: dict[str, _Handler] = {
    "-i": lambda b, o, v: b.interfaces.append(_interface(o, v)),
    "--interface": lambda b, o, v: b.interfaces.append(_interface(o, v)),
    "--device-id": _set_int("device_id"),
    "--log-file": _set("log_file"),
    "-L": _log_level,
    "--log-level": _log_level,
    "--dump-packet-data": _set_int("dump_packet_data"),
    "--queue-rate": lambda b, o, v: b.queue_rates.append(_port_value(o, v)),
    "--queue-depth": lambda b, o, v: b.queue_depths.append(_port_value(o, v)),
    "--port-speed": lambda b, o, v: b.port_speeds.append(_port_speed(o, v)),
    "--offloads": _offloads,
    "--send-buffer": _set_int("send_buffer", 4096, 1 << 30),
    "--thrift-port": _set_int("thrift_port", 0, 65535),
    "--load-modules": lambda b, o, v: b.modules.extend(p for p in v.split(",") if p),
    "--nanolog": _warn("this target has no nanolog event stream"),
    "--notifications-addr": _warn("this target has no nanomsg notifications"),
    "--max-port-count": _warn("ports are not limited here"),
    "--restore-state": _warn("state restore is not supported"),
}
_MAIN_FLAGS: dict[str, _Handler] = {
    "--log-console": lambda b, o, v: b.values.__setitem__("log_console", True),
    "--log-flush": lambda b, o, v: None,
    "--no-p4": lambda b, o, v: b.values.__setitem__("no_p4", True),
    "-h": lambda b, o, v: b.values.__setitem__("show_help", True),
    "--help": lambda b, o, v: b.values.__setitem__("show_help", True),
    "-v": lambda b, o, v: b.values.__setitem__("show_version", True),
    "--version": lambda b, o, v: b.values.__setitem__("show_version", True),
    "--debugger": _warn("this target has no debugger"),
    "--use-files": _warn("file ports are not supported"),
    "--packet-in": _warn("use -i PORT@IFACE"),
}
_TARGET_VALUED: dict[str, _Handler] = {
    "--grpc-server-addr": lambda b, o, v: b.values.__setitem__("grpc_addr", _grpc_addr(o, v)),
    "--cpu-port": _set_int("cpu_port", 0, 511),
    "--drop-port": _set_int("drop_port", 0, 511),
    "--grpc-server-cacert": _tls("cacert"),
    "--grpc-server-cert": _tls("cert"),
    "--grpc-server-key": _tls("key"),
    "--priority-queues": _set_int("priority_queues", 1, 8),
    "--dp-grpc-server-addr": _warn("this target has no dataplane gRPC service"),
}
_TARGET_FLAGS: dict[str, _Handler] = {
    "--grpc-server-ssl": lambda b, o, v: b.tls.__setitem__("ssl", True),
    "--grpc-server-with-client-auth": lambda b, o, v: b.tls.__setitem__("with-client-auth", True),
    "--enable-swap": _warn("pipeline swapping is implicit here"),
}


def _parse_section(
    argv: Sequence[str],
    valued: dict[str, _Handler],
    flags: dict[str, _Handler],
    b: _Builder,
    allow_positional: bool,
) -> None:
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        name, eq, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name == "--pcap":
            if eq:
                b.values["pcap_dir"] = inline
            else:
                b.values["pcap_dir"] = "."
                if i < len(argv) and _is_directory(argv[i]):
                    b.values["pcap_dir"] = argv[i]
                    i += 1
            continue
        if name in valued:
            if not eq:
                if i >= len(argv):
                    raise UsageError(f"option {name} needs a value")
                inline = argv[i]
                i += 1
            valued[name](b, name, inline)
        elif name in flags:
            if eq:
                raise UsageError(f"option {name} takes no value")
            flags[name](b, name, "")
        elif name.startswith("-i") and len(name) > 2 and "-i" in valued:
            valued["-i"](b, "-i", name[2:])
        elif name.startswith("-L") and len(name) > 2 and "-L" in valued:
            valued["-L"](b, "-L", name[2:])
        elif arg.startswith("-") and arg != "-":
            raise UsageError(f"unknown option {name}")
        elif allow_positional:
            b.positionals.append(arg)
        else:
            raise UsageError(f"unexpected argument {arg!r} among the target options")


def _is_directory(path: str) -> bool:

    return not path.startswith("-") and os.path.isdir(path)


def parse_argv(argv: Sequence[str]) -> SwitchOptions:
    """Parse a simple_switch_grpc command line; raise :class:`UsageError` if it is wrong."""
    argv = list(argv)
    split = argv.index("--") if "--" in argv else len(argv)
    b = _Builder()
    _parse_section(argv[:split], _MAIN_VALUED, _MAIN_FLAGS, b, allow_positional=True)
    _parse_section(argv[split + 1 :], _TARGET_VALUED, _TARGET_FLAGS, b, allow_positional=False)
    if b.values.get("show_help") or b.values.get("show_version"):
        return SwitchOptions(
            show_help=bool(b.values.get("show_help")),
            show_version=bool(b.values.get("show_version")),
        )
    if len(b.positionals) > 1:
        raise UsageError(f"only one program may be given, got {' '.join(b.positionals)}")
    no_p4 = bool(b.values.get("no_p4"))
    program = b.positionals[0] if b.positionals else None
    if no_p4 and program is not None:
        raise UsageError(f"--no-p4 and a program ({program}) exclude each other")
    if not no_p4 and program is None:
        raise UsageError("a program is required, or --no-p4")
    if b.values.get("log_console") and b.values.get("log_file") is not None:
        raise UsageError("--log-console and --log-file exclude each other")
    _check_unique_interfaces(b.interfaces)
    _check_port_speeds(b.port_speeds, b.interfaces)
    return SwitchOptions(
        program=program,
        no_p4=no_p4,
        interfaces=tuple(b.interfaces),
        device_id=b.values.get("device_id", 0),
        log_console=bool(b.values.get("log_console", False)),
        log_file=_opt_str(b.values.get("log_file")),
        log_level=str(b.values.get("log_level", "trace")),
        pcap_dir=_opt_str(b.values.get("pcap_dir")),
        dump_packet_data=b.values.get("dump_packet_data", 0),
        queue_rates=tuple(b.queue_rates),
        queue_depths=tuple(b.queue_depths),
        port_speeds=tuple(b.port_speeds),
        offloads=b.values.get("offloads", "disable"),
        send_buffer=_opt_int(b.values.get("send_buffer")),
        grpc_addr=str(b.values.get("grpc_addr", "0.0.0.0:9559")),
        cpu_port=_opt_int(b.values.get("cpu_port")),
        drop_port=b.values.get("drop_port", 511),
        tls=_tls_options(b.tls),
        priority_queues=b.values.get("priority_queues", 1),
        thrift_port=_opt_int(b.values.get("thrift_port")),
        modules=tuple(b.modules),
        warnings=tuple(b.warnings),
    )


def _opt_str(value: object) -> str | None:
    return None if value is None else str(value)


def _opt_int(value: object) -> int | None:
    return value if isinstance(value, int) else None


def _check_unique_interfaces(interfaces: Sequence[tuple[int, str]]) -> None:
    ports: set[int] = set()
    names: set[str] = set()
    for port, iface in interfaces:
        if port in ports:
            raise UsageError(f"-i: port {port} is given twice")
        if iface in names:
            raise UsageError(f"-i: interface {iface} is given twice")
        ports.add(port)
        names.add(iface)


def _check_port_speeds(
    speeds: Sequence[tuple[int | None, int]], interfaces: Sequence[tuple[int, str]]
) -> None:
    ports = {port for port, _ in interfaces}
    for port, _ in speeds:
        if port is not None and port not in ports:
            known = ", ".join(str(p) for p in sorted(ports)) or "none"
            raise UsageError(f"--port-speed: port {port} has no interface (-i): ports {known}")


def _tls_options(tls: dict[str, Any]) -> TlsOptions | None:
    if not tls.get("ssl"):
        extra = sorted(k for k in tls if k != "ssl")
        if extra:
            raise UsageError(f"--grpc-server-{extra[0]} needs --grpc-server-ssl")
        return None
    cert, key = tls.get("cert"), tls.get("key")
    if cert is None or key is None:
        raise UsageError("--grpc-server-ssl needs --grpc-server-cert and --grpc-server-key")
    with_client_auth = bool(tls.get("with-client-auth"))
    cacert = _opt_str(tls.get("cacert"))
    if with_client_auth and cacert is None:
        raise UsageError("--grpc-server-with-client-auth needs --grpc-server-cacert")
    return TlsOptions(str(cert), str(key), cacert, with_client_auth)
