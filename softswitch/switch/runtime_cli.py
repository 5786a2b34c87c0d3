"""simple_switch_CLI's commands, applied to a running switch's runtime state.

The switch side of ``simple_switch_CLI``: :class:`RuntimeCli` takes one command
line of BMv2's runtime CLI and returns the text the CLI prints, or raises
:class:`CliError` with BMv2-like wording.  It is pure (no sockets, no clock):
:mod:`softswitch.switch.control` feeds it lines from the control channel.

Commands (BMv2's grammar)::

    table_add T A KEY... => PARAM... [PRIORITY]     table_set_default T A PARAM...
    table_delete T HANDLE     table_clear T     table_dump T     table_num_entries T
    show_tables     show_actions
    counter_read C INDEX      counter_reset C
    register_read R [INDEX]   register_write R INDEX VALUE   register_reset R
    mirroring_add SESSION PORT   mirroring_add_mc SESSION MGID   mirroring_delete SESSION
    mc_mgrp_create MGID   mc_mgrp_destroy MGID   mc_node_create RID PORT...
    mc_node_update HANDLE PORT...   mc_node_destroy HANDLE
    mc_node_associate MGID HANDLE   mc_node_dissociate MGID HANDLE   mc_dump
    set_queue_rate PPS [PORT [PRIORITY]]   set_queue_depth N [PORT [PRIORITY]]
    show_ports     set_port_speed PORT RATE|default
    help

Names resolve exactly or by a unique dotted suffix, as in BMv2's CLI.  Values
are decimal, ``0x`` hex, dotted IPv4 or colon-separated MAC.  Keys: exact
``V``, lpm ``V/LEN``, ternary ``V&&&MASK``, range ``LO->HI``, optional ``V``.
A priority (tables with ternary, range or optional keys) follows BMv2: the
smaller number wins; the runtime, which prefers the larger, gets
``PRIORITY_BASE - p``.  Entry handles are this session's own numbering, kept
until the pipeline changes; entries written over P4Runtime get one when first
dumped.  Queue settings go to the :class:`QueueControl`: the switch's traffic
manager, which keeps them across pipeline changes, as BMv2's does.

``show_ports`` lists the ports as BMv2's does (number, interface, status), with the
speed each reports over gNMI; ``set_port_speed`` provisions a port at a speed
(``400G``, ``20Mbps``, ``SPEED_100GB``), or back at its default one
(:class:`~softswitch.switch.interfaces.Interfaces`).
"""

from __future__ import annotations

import ipaddress
import shlex
from collections.abc import Callable, Sequence
from typing import Protocol

from softswitch.errors import RuntimeConfigError, SoftswitchError
from softswitch.runtime import tables as rt
from softswitch.runtime.actions import ActionCall, ActionSpec
from softswitch.runtime.externs import Counter, DirectCounter
from softswitch.runtime.state import RuntimeState
from softswitch.runtime.tables import Table, TableEntry
from softswitch.switch.interfaces import Interfaces, SpeedError, parse_rate, speed_name

PRIORITY_BASE = 2**31 - 1


class CliError(SoftswitchError):
    """A command that cannot be run; the message is what the CLI prints."""


class QueueControl(Protocol):
    """The traffic-manager settings the CLI changes."""

    def set_queue_rate(self, port: int | None, pps: int, priority: int | None = None) -> None: ...

    def set_queue_depth(
        self, port: int | None, depth: int, priority: int | None = None
    ) -> None: ...


def parse_value(text: str, width: int, what: str) -> int:
    """A CLI value: decimal, 0x hex, IPv4 or MAC; CliError if malformed or too wide."""
    try:
        if text.count(".") == 3:
            value = int(ipaddress.IPv4Address(text))
        elif ":" in text and all(len(p) <= 2 for p in text.split(":")) and text.count(":") == 5:
            value = int(text.replace(":", ""), 16)
        elif ":" in text:
            value = int(ipaddress.IPv6Address(text))
        else:
            value = int(text, 0)
    except ValueError:
        raise CliError(f"{what}: {text!r} is not a number, IPv4, IPv6 or MAC address") from None
    if value < 0 or value >> width:
        raise CliError(f"{what}: {text} does not fit in {width} bits")
    return value


def _int(text: str, what: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise CliError(f"{what}: {text!r} is not an integer") from None
    if value < 0:
        raise CliError(f"{what}: {text} is negative")
    return value


def parse_key(text: str, key: rt.KeySpec) -> rt.Match | None:
    """One key field of ``table_add`` in BMv2's notation for its match kind."""
    what = f"key {key.name}"
    if key.kind == "lpm":
        value, sep, plen = text.partition("/")
        length = _int(plen, what) if sep else key.width
        if length > key.width:
            raise CliError(f"{what}: prefix length {length} exceeds {key.width} bits")
        return rt.Lpm(parse_value(value, key.width, what), length)
    if key.kind == "ternary":
        value, sep, mask = text.partition("&&&")
        if not sep:
            raise CliError(f"{what}: a ternary key is VALUE&&&MASK, got {text!r}")
        return rt.Ternary(parse_value(value, key.width, what), parse_value(mask, key.width, what))
    if key.kind == "range":
        low, sep, high = text.partition("->")
        if not sep:
            raise CliError(f"{what}: a range key is LOW->HIGH, got {text!r}")
        return rt.Range(parse_value(low, key.width, what), parse_value(high, key.width, what))
    if key.kind == "optional":
        return rt.Optional(parse_value(text, key.width, what))
    return rt.Exact(parse_value(text, key.width, what))


def show_match(match: rt.Match | None, key: rt.KeySpec) -> str:
    """A key field as ``table_dump`` prints it (hex, BMv2 style)."""
    digits = max(1, (key.width + 3) // 4)

    def h(v: int) -> str:
        return f"{v:0{digits}x}"

    match match:
        case None:
            return "*"
        case rt.Lpm(value, prefix_len):
            return f"{h(value)}/{prefix_len}"
        case rt.Ternary(value, mask):
            return f"{h(value)} &&& {h(mask)}"
        case rt.Range(low, high):
            return f"{h(low)} -> {h(high)}"
        case rt.Exact(value) | rt.Optional(value):
            return h(value)


def _needs_priority(table: Table) -> bool:
    return any(k.kind in ("ternary", "range", "optional") for k in table.match_keys)


def _resolve_action(name: str, actions: Sequence[ActionSpec], table: str) -> ActionSpec:
    exact = [a for a in actions if a.name == name]
    if exact:
        return exact[0]
    suffix = [a for a in actions if a.name.endswith("." + name)]
    if len(suffix) == 1:
        return suffix[0]
    known = ", ".join(a.name for a in actions)
    raise CliError(f"Invalid action name '{name}' for table {table}; its actions: {known}")


class RuntimeCli:
    """Runs CLI command lines against ``state_of()`` (the current pipeline's state)."""

    def __init__(
        self,
        state_of: Callable[[], RuntimeState | None],
        queues: QueueControl,
        ports: Interfaces | None = None,
    ) -> None:
        self._state_of = state_of
        self._queues = queues
        self._ports = ports
        self._for: RuntimeState | None = None
        self._handles: dict[str, dict[int, TableEntry]] = {}
        self._by_id: dict[int, int] = {}
        self._next = 0

    # --------------------------------------------------------------- plumbing

    def run(self, line: str) -> str:
        """Run one command line; returns its output; CliError if it fails."""
        try:
            words = shlex.split(line, comments=True)
        except ValueError as exc:
            raise CliError(f"cannot split the line: {exc}") from None
        if not words:
            return ""
        command, args = words[0], words[1:]
        handler = getattr(self, f"do_{command}", None)
        if handler is None:
            raise CliError(f"*** Unknown syntax: {line.strip()}")
        try:
            return str(handler(args))
        except RuntimeConfigError as exc:
            raise CliError(f"Invalid {command} operation ({exc.code}): {exc}") from None
        except IndexError:
            raise CliError(f"{command}: missing arguments; see `help {command}`") from None

    def _state(self) -> RuntimeState:
        state = self._state_of()
        if state is None:
            raise CliError("no P4 program is loaded on the switch")
        if state is not self._for:
            self._for, self._handles, self._by_id, self._next = state, {}, {}, 0
        return state

    def _handle(self, table: str, entry: TableEntry) -> int:
        handle = self._by_id.get(id(entry))
        if handle is None or self._handles.get(table, {}).get(handle) is not entry:
            handle = self._next
            self._next += 1
            self._handles.setdefault(table, {})[handle] = entry
            self._by_id[id(entry)] = handle
        return handle

    def _entry(self, table: Table, text: str) -> TableEntry:
        handle = _int(text, "entry handle")
        entry = self._handles.get(table.spec.name, {}).get(handle)
        live = {id(e) for e in table.entries()}
        if entry is None or id(entry) not in live:
            raise CliError(f"Invalid table operation (INVALID_HANDLE): no entry {handle}")
        return entry

    # --------------------------------------------------------------- tables

    def do_show_tables(self, args: list[str]) -> str:
        state = self._state()
        lines = []
        for name, table in sorted(state.tables.items()):
            keys = ",\t".join(f"{k.name}({k.kind}, {k.width})" for k in table.match_keys)
            lines.append(f"{name:<40}[{keys}]")
        return "\n".join(lines)

    def do_show_actions(self, args: list[str]) -> str:
        state = self._state()
        actions: dict[str, ActionSpec] = {}
        for table in state.tables.values():
            for spec in table.spec.actions:
                actions[spec.name] = spec
        return "\n".join(
            f"{name:<40}[{', '.join(f'{p}({w})' for p, w in spec.params)}]"
            for name, spec in sorted(actions.items())
        )

    def _call(self, table: Table, action: str, params: list[str]) -> ActionCall:
        spec = _resolve_action(action, table.spec.actions, table.spec.name)
        if len(params) != len(spec.params):
            raise CliError(
                f"Action {spec.name} needs {len(spec.params)} parameters, got {len(params)}"
            )
        args = tuple(
            parse_value(text, width, f"parameter {name}")
            for text, (name, width) in zip(params, spec.params, strict=True)
        )
        return ActionCall(spec.name, args)

    def do_table_add(self, args: list[str]) -> str:
        table = self._state().table(args[0])
        action = args[1]
        rest = args[2:]
        if "=>" not in rest:
            raise CliError("table_add TABLE ACTION KEY... => PARAM... [PRIORITY]: no '=>'")
        split = rest.index("=>")
        key_texts, params = rest[:split], rest[split + 1 :]
        keys = table.match_keys
        if len(key_texts) != len(keys):
            raise CliError(
                f"Table {table.spec.name} needs {len(keys)} key fields, got {len(key_texts)}"
            )
        priority = 0
        if _needs_priority(table):
            if not params:
                raise CliError(f"Table {table.spec.name} needs a priority after the parameters")
            bmv2_priority = _int(params[-1], "priority")
            if bmv2_priority >= PRIORITY_BASE:
                raise CliError(f"priority {bmv2_priority} is too large")
            priority = PRIORITY_BASE - bmv2_priority
            params = params[:-1]
        matches = tuple(parse_key(t, k) for t, k in zip(key_texts, keys, strict=True))
        call = self._call(table, action, params)
        entry = table.insert(TableEntry(matches, priority=priority, action=call))
        handle = self._handle(table.spec.name, entry)
        return (
            f"Adding entry to {keys[0].kind if keys else 'exact'} match table "
            f"{table.spec.name}\nmatch key: "
            + " ".join(show_match(m, k) for m, k in zip(entry.matches, keys, strict=True))
            + f"\naction: {call.name}\nruntime data: "
            + "\t".join(str(a) for a in call.args)
            + f"\nEntry has been added with handle {handle}"
        )

    def do_table_set_default(self, args: list[str]) -> str:
        table = self._state().table(args[0])
        call = self._call(table, args[1], args[2:])
        table.set_default(call)
        return f"Setting default action of {table.spec.name}\naction: {call.name}"

    def do_table_delete(self, args: list[str]) -> str:
        table = self._state().table(args[0])
        entry = self._entry(table, args[1])
        table.delete(entry)
        return f"Deleting entry {args[1]} from {table.spec.name}"

    def do_table_clear(self, args: list[str]) -> str:
        table = self._state().table(args[0])
        table.clear()
        return f"Clearing table {table.spec.name}"

    def do_table_num_entries(self, args: list[str]) -> str:
        return str(len(self._state().table(args[0])))

    def do_table_dump(self, args: list[str]) -> str:
        table = self._state().table(args[0])
        keys = table.match_keys
        lines = ["=" * 10, f"TABLE ENTRIES ({table.spec.name})"]
        for entry in sorted(table.entries(), key=lambda e: e.seq):
            handle = self._handle(table.spec.name, entry)
            lines.append("*" * 10)
            lines.append(f"Dumping entry {hex(handle)}")
            lines.append("Match key:")
            for match, key in zip(entry.matches, keys, strict=True):
                lines.append(f"* {key.name:<22}: {key.kind.upper():<8}{show_match(match, key)}")
            if entry.priority:
                lines.append(f"Priority: {PRIORITY_BASE - entry.priority}")
            lines.append(f"Action entry: {_show_call(entry)}")
        lines.append("=" * 10)
        lines.append(f"Dumping default entry\nAction entry: {table.default_action}")
        lines.append("=" * 10)
        return "\n".join(lines)

    # --------------------------------------------------------------- counters, registers

    def do_counter_read(self, args: list[str]) -> str:
        state = self._state()
        name, index = args[0], _int(args[1], "index")
        counter = _find(state, ("counter", "direct_counter"), name)
        if isinstance(counter, Counter):
            data = counter.read(index)
            label = counter.name
        else:
            assert isinstance(counter, DirectCounter)
            table = state.table(counter.table)
            data = DirectCounter.read(self._entry(table, args[1]))
            label = counter.name
        return f"{label}[{index}]=  BmCounterValue(packets={data.packets}, bytes={data.bytes})"

    def do_counter_reset(self, args: list[str]) -> str:
        counter = self._state().counter(args[0])
        counter.reset()
        return ""

    def do_register_read(self, args: list[str]) -> str:
        register = self._state().register(args[0])
        if len(args) > 1:
            index = _int(args[1], "index")
            return f"{register.name}[{index}]= {register.get(index)}"
        return f"{register.name}= " + ", ".join(str(v) for v in register.get_all())

    def do_register_write(self, args: list[str]) -> str:
        register = self._state().register(args[0])
        register.set(_int(args[1], "index"), _int(args[2], "value"))
        return ""

    def do_register_reset(self, args: list[str]) -> str:
        self._state().register(args[0]).reset()
        return ""

    # --------------------------------------------------------------- replication

    def do_mirroring_add(self, args: list[str]) -> str:
        session, port = _int(args[0], "session"), _int(args[1], "port")
        self._state().pre.mirroring_add(session, port)
        return ""

    def do_mirroring_add_mc(self, args: list[str]) -> str:
        self._state().pre.mirroring_add_mc(_int(args[0], "session"), _int(args[1], "mgrp"))
        return ""

    def do_mirroring_delete(self, args: list[str]) -> str:
        self._state().pre.mirroring_delete(_int(args[0], "session"))
        return ""

    def do_mc_mgrp_create(self, args: list[str]) -> str:
        mgid = _int(args[0], "mgrp")
        self._state().pre.mc_mgrp_create(mgid)
        return f"Creating multicast group {mgid}"

    def do_mc_mgrp_destroy(self, args: list[str]) -> str:
        mgid = _int(args[0], "mgrp")
        self._state().pre.mc_mgrp_destroy(mgid)
        return f"Destroying multicast group {mgid}"

    def do_mc_node_create(self, args: list[str]) -> str:
        rid = _int(args[0], "rid")
        ports = [_int(p, "port") for p in args[1:]]
        handle = self._state().pre.mc_node_create(rid, ports)
        return f"Creating node with rid {rid}, ports {ports}\nnode was created with handle {handle}"

    def do_mc_node_update(self, args: list[str]) -> str:
        handle = _int(args[0], "handle")
        self._state().pre.mc_node_update(handle, [_int(p, "port") for p in args[1:]])
        return f"Updating node {handle}"

    def do_mc_node_destroy(self, args: list[str]) -> str:
        handle = _int(args[0], "handle")
        self._state().pre.mc_node_destroy(handle)
        return f"Destroying node {handle}"

    def do_mc_node_associate(self, args: list[str]) -> str:
        mgid, handle = _int(args[0], "mgrp"), _int(args[1], "handle")
        self._state().pre.mc_node_associate(mgid, handle)
        return f"Associating node {handle} to multicast group {mgid}"

    def do_mc_node_dissociate(self, args: list[str]) -> str:
        mgid, handle = _int(args[0], "mgrp"), _int(args[1], "handle")
        self._state().pre.mc_node_dissociate(mgid, handle)
        return f"Dissociating node {handle} from multicast group {mgid}"

    def do_mc_dump(self, args: list[str]) -> str:
        lines = ["=" * 10, "MC ENTRIES"]
        for mgid, replicas in sorted(self._state().pre.multicast_groups().items()):
            lines.append("*" * 10)
            lines.append(f"mgrp({mgid})")
            lines.extend(f"  -> (rid {r.instance}) port {r.egress_port}" for r in replicas)
        lines.append("=" * 10)
        return "\n".join(lines)

    # --------------------------------------------------------------- queues

    def _queue_args(self, args: list[str], what: str) -> tuple[int, int | None, int | None]:
        if not 1 <= len(args) <= 3:
            raise CliError(f"set_queue_{what} {what.upper()} [PORT [PRIORITY]]")
        value = _int(args[0], what)
        port = _int(args[1], "port") if len(args) > 1 else None
        priority = _int(args[2], "priority") if len(args) > 2 else None
        return value, port, priority

    def do_set_queue_rate(self, args: list[str]) -> str:
        rate, port, priority = self._queue_args(args, "rate")
        self._queues.set_queue_rate(port, rate, priority)
        return ""

    def do_set_queue_depth(self, args: list[str]) -> str:
        depth, port, priority = self._queue_args(args, "depth")
        self._queues.set_queue_depth(port, depth, priority)
        return ""

    # --------------------------------------------------------------- ports

    def _interfaces(self) -> Interfaces:
        if self._ports is None:
            raise CliError("this switch reports no ports")
        return self._ports

    def do_show_ports(self, args: list[str]) -> str:
        lines = [f"{'port #':<8}{'iface name':<17}{'status':<9}{'speed':<14}extra info",
                 "=" * 60]  # fmt: skip
        for view in self._interfaces().views():
            status = "UP" if view.oper_status == "UP" else "DOWN"
            speed = speed_name(view.speed_bps)
            shown = (
                speed
                if view.speed_bps is None or speed != "SPEED_UNKNOWN"
                else (f"{view.speed_bps} b/s")
            )
            extra = f"oper-status {view.oper_status}" + (
                ", provisioned" if view.provisioned else ""
            )
            lines.append(f"{view.number:<8}{view.name:<17}{status:<9}{shown:<14}{extra}")
        return "\n".join(lines)

    def do_set_port_speed(self, args: list[str]) -> str:
        if len(args) != 2:
            raise CliError("set_port_speed PORT RATE|default")
        port = _int(args[0], "port")
        try:
            bps = None if args[1] == "default" else parse_rate(args[1])
            self._interfaces().set_speed(port, bps)
        except SpeedError as exc:
            raise CliError(f"set_port_speed: {exc}") from None
        view = self._interfaces().view(port)
        return f"port {port} ({view.name}) at {speed_name(view.speed_bps)} ({view.speed_bps} b/s)"

    def do_help(self, args: list[str]) -> str:
        commands = sorted(name[3:] for name in dir(self) if name.startswith("do_"))
        return "Documented commands (type help <topic>):\n" + "  ".join(commands)


def _show_call(entry: TableEntry) -> str:
    if entry.action is not None:
        args = ", ".join(f"{a:x}" for a in entry.action.args)
        return f"{entry.action.name} - {args}"
    if entry.member_id is not None:
        return f"member {entry.member_id}"
    return f"group {entry.group_id}"


def _find(state: RuntimeState, kinds: Sequence[str], name: str) -> object:
    last: RuntimeConfigError | None = None
    for kind in kinds:
        try:
            return state.lookup(kind, name)
        except RuntimeConfigError as exc:
            if exc.code != "NOT_FOUND":
                raise
            last = exc
    assert last is not None
    raise last
