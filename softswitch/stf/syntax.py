"""The STF test format of p4c, read into commands.

An STF file is a list of lines, one command each; ``#`` starts a comment that
runs to the end of the line, and blank lines are ignored. The commands are
those that p4c's BMv2 STF driver (``backends/bmv2/bmv2stf.py``) and its PLY
grammar (``stf_parser.py``) accept, plus the simple_switch_CLI commands that
the driver passes through, plus two kvfabric extensions for action profiles::

    add TABLE [PRIORITY] KEY:VALUE ... ACTION(PARAM:VALUE, ...) [= HANDLE]
    add TABLE [PRIORITY] KEY:VALUE ... @member(ID) | @group(ID)      (kvfabric)
    setdefault TABLE ACTION(PARAM:VALUE, ...)
    packet PORT HEX...
    expect PORT [HEX...[$]]
    no_packet                       accepted; checks nothing (as in BMv2)
    wait                            accepted; the target is synchronous
    remove all                      delete every entry of every table
    check_counter NAME(INDEX | $HANDLE) [packets|bytes OP NUMBER]
    counter_read NAME INDEX [packets|bytes OP NUMBER]...
    counter_write NAME INDEX PACKETS BYTES
    counter_reset NAME
    register_read NAME INDEX [OP NUMBER]
    register_write NAME INDEX VALUE
    register_reset NAME
    meter_set_rates NAME INDEX RATE:BURST RATE:BURST
    mirroring_add SESSION PORT
    mc_mgrp_create MGRP            mc_mgrp_destroy MGRP
    mc_node_create RID PORT...     mc_node_update HANDLE PORT...
    mc_node_destroy HANDLE
    mc_node_associate MGRP HANDLE  mc_node_dissociate MGRP HANDLE
    member PROFILE MEMBER_ID ACTION(PARAM:VALUE, ...)                (kvfabric)
    group PROFILE GROUP_ID MEMBER_ID...                              (kvfabric)

OP is one of ``== != < <= > >=``. Any other first word is an error located at
its line (BMv2's driver silently skips unknown commands; a typo then makes a
test pass for the wrong reason, so this reader refuses them).

Numbers are decimal, ``0x`` hex, ``0b`` binary or ``0o`` octal, and a hex,
binary or octal digit may be ``*``: that digit is a don't-care. A key value
is a number, ``*``, ``VALUE/PREFIX_LEN``, ``VALUE&&&MASK`` or ``LOW->HIGH``;
what it means depends on the key's match kind and is decided by the runner,
which knows the widths. This module only reads text: it resolves no names.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from softswitch.errors import StfError

# ---------------------------------------------------------------- values


@dataclass(frozen=True, slots=True)
class Number:
    """A numeric literal. ``care`` has a 1 for every bit that is not a ``*``.

    ``bits`` is the number of bits the digits spell (4 per hex digit, ...),
    or None for a decimal literal, whose width is that of its use.
    """

    value: int
    care: int
    bits: int | None
    text: str

    @property
    def has_wildcards(self) -> bool:
        return self.bits is not None and self.care != (1 << self.bits) - 1


@dataclass(frozen=True, slots=True)
class Wildcard:
    """A key value of ``*``: matches anything."""

    text: str = "*"


@dataclass(frozen=True, slots=True)
class Prefix:
    """``VALUE/LEN``."""

    value: Number
    prefix_len: int
    text: str


@dataclass(frozen=True, slots=True)
class Masked:
    """``VALUE&&&MASK``."""

    value: Number
    mask: Number
    text: str


@dataclass(frozen=True, slots=True)
class Span:
    """``LOW->HIGH``, a range key value."""

    low: Number
    high: Number
    text: str


KeyValue = Number | Wildcard | Prefix | Masked | Span


# -------------------------------------------------------------- commands


@dataclass(frozen=True, slots=True)
class ActionRef:
    """``NAME(PARAM:VALUE, ...)`` as written."""

    name: str
    args: tuple[tuple[str, Number], ...]


@dataclass(frozen=True, slots=True)
class MemberRef:
    """``@member(ID)``: an entry of an action profile table."""

    member_id: int


@dataclass(frozen=True, slots=True)
class GroupRef:
    """``@group(ID)``: an entry of an action selector table."""

    group_id: int


@dataclass(frozen=True, slots=True)
class Add:
    line: int
    table: str
    priority: int | None
    keys: tuple[tuple[str, KeyValue], ...]
    action: ActionRef | MemberRef | GroupRef
    handle: str | None = None


@dataclass(frozen=True, slots=True)
class SetDefault:
    line: int
    table: str
    action: ActionRef


@dataclass(frozen=True, slots=True)
class RemoveAll:
    line: int


@dataclass(frozen=True, slots=True)
class Packet:
    line: int
    port: int
    data: bytes


@dataclass(frozen=True, slots=True)
class Expect:
    """An expected output packet, or (``pattern`` None) any number of them.

    ``pattern`` is upper-case hex where ``*`` matches any digit; a received
    packet matches when it starts with the pattern, and, if ``exact_length``
    (the line ended with ``$``), has no more digits than the pattern.
    """

    line: int
    port: int
    pattern: str | None
    exact_length: bool = False


@dataclass(frozen=True, slots=True)
class NoPacket:
    line: int


@dataclass(frozen=True, slots=True)
class Wait:
    line: int


@dataclass(frozen=True, slots=True)
class Comparison:
    """``FIELD OP VALUE``; field is ``packets``, ``bytes`` or ``value``."""

    field: str
    op: str
    value: int


@dataclass(frozen=True, slots=True)
class CounterRead:
    """``check_counter`` and ``counter_read``: index is an int or an entry handle."""

    line: int
    name: str
    index: int | str
    checks: tuple[Comparison, ...]


@dataclass(frozen=True, slots=True)
class CounterWrite:
    line: int
    name: str
    index: int
    packets: int
    bytes: int


@dataclass(frozen=True, slots=True)
class CounterReset:
    line: int
    name: str


@dataclass(frozen=True, slots=True)
class RegisterRead:
    line: int
    name: str
    index: int
    checks: tuple[Comparison, ...]


@dataclass(frozen=True, slots=True)
class RegisterWrite:
    line: int
    name: str
    index: int
    value: int


@dataclass(frozen=True, slots=True)
class RegisterReset:
    line: int
    name: str


@dataclass(frozen=True, slots=True)
class MeterSetRates:
    """simple_switch_CLI's rates: units (bytes or packets) per microsecond."""

    line: int
    name: str
    index: int | str
    rates: tuple[tuple[float, int], ...]


@dataclass(frozen=True, slots=True)
class MirroringAdd:
    line: int
    session: int
    port: int


@dataclass(frozen=True, slots=True)
class McMgrpCreate:
    line: int
    mgrp: int


@dataclass(frozen=True, slots=True)
class McMgrpDestroy:
    line: int
    mgrp: int


@dataclass(frozen=True, slots=True)
class McNodeCreate:
    line: int
    rid: int
    ports: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class McNodeUpdate:
    line: int
    handle: int
    ports: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class McNodeDestroy:
    line: int
    handle: int


@dataclass(frozen=True, slots=True)
class McNodeAssociate:
    line: int
    mgrp: int
    handle: int


@dataclass(frozen=True, slots=True)
class McNodeDissociate:
    line: int
    mgrp: int
    handle: int


@dataclass(frozen=True, slots=True)
class ProfileMember:
    line: int
    profile: str
    member_id: int
    action: ActionRef


@dataclass(frozen=True, slots=True)
class ProfileGroup:
    line: int
    profile: str
    group_id: int
    members: tuple[int, ...]


Command = (
    Add
    | SetDefault
    | RemoveAll
    | Packet
    | Expect
    | NoPacket
    | Wait
    | CounterRead
    | CounterWrite
    | CounterReset
    | RegisterRead
    | RegisterWrite
    | RegisterReset
    | MeterSetRates
    | MirroringAdd
    | McMgrpCreate
    | McMgrpDestroy
    | McNodeCreate
    | McNodeUpdate
    | McNodeDestroy
    | McNodeAssociate
    | McNodeDissociate
    | ProfileMember
    | ProfileGroup
)


@dataclass(frozen=True, slots=True)
class StfScript:
    """A parsed STF file: its commands in file order."""

    file: str
    commands: tuple[Command, ...]


# ---------------------------------------------------------------- reader


def parse_stf_file(path: str | Path) -> StfScript:
    """Read and parse an STF file; raises StfError for a bad line or a missing file."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise StfError(name, 0, f"cannot read STF file: {exc}") from exc
    return parse_stf(text, name)


def parse_stf(text: str, file: str = "<stf>") -> StfScript:
    """Parse the text of an STF file; raises StfError(file, line, message)."""
    commands: list[Command] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            commands.append(_parse_line(line, number))
        except _LineError as exc:
            raise StfError(file, number, str(exc)) from None
    return StfScript(file, tuple(commands))


class _LineError(Exception):
    """A problem with the line being read; parse_stf adds the location."""


def _parse_line(line: str, number: int) -> Command:
    word, _, rest = line.partition(" ")
    keyword = word.lower()
    rest = rest.strip()
    handler = _HANDLERS.get(keyword)
    if handler is None:
        known = ", ".join(sorted(_HANDLERS))
        raise _LineError(f"unknown STF command '{word}' (known: {known})")
    return handler(rest, number)


# ---------------------------------------------------------------- tables

_KEY_TOKEN = re.compile(r"^([A-Za-z_$](?:[\w.$]|\[\d+(?::\d+)?\])*(?:\(\))?):(.*)$")
_ACTION_START = re.compile(r"[A-Za-z_$][\w.$]*\(")
_PROFILE_REF = re.compile(r"@(member|group)\(\s*(\d+)\s*\)$")


def _parse_add(rest: str, number: int) -> Add:
    table, _, rest = rest.partition(" ")
    if not table:
        raise _LineError("add needs a table name")
    rest = rest.strip()
    priority: int | None = None
    keys: list[tuple[str, KeyValue]] = []
    for match in re.finditer(r"\S+", rest):
        token = match.group(0)
        key = _KEY_TOKEN.match(token)
        if key is not None:
            keys.append((key.group(1), _parse_key_value(key.group(2))))
            continue
        if token.startswith("@"):
            action, handle = _parse_profile_ref(rest[match.start() :])
            return Add(number, table, priority, tuple(keys), action, handle)
        if _ACTION_START.match(token):
            call, handle = _parse_action_and_handle(rest[match.start() :])
            return Add(number, table, priority, tuple(keys), call, handle)
        if priority is None and not keys and token.isdigit():
            priority = int(token)
            continue
        raise _LineError(f"expected KEY:VALUE or ACTION(...) in add, found '{token}'")
    raise _LineError("add needs an action: ACTION(PARAM:VALUE, ...)")


def _parse_profile_ref(text: str) -> tuple[MemberRef | GroupRef, str | None]:
    body, handle = _split_handle(text)
    match = _PROFILE_REF.match(body)
    if match is None:
        raise _LineError(f"expected @member(ID) or @group(ID), found '{body}'")
    ident = int(match.group(2))
    ref: MemberRef | GroupRef = MemberRef(ident) if match.group(1) == "member" else GroupRef(ident)
    return ref, handle


def _split_handle(text: str) -> tuple[str, str | None]:
    """Split ``... = HANDLE`` (p4c's entry handle, used by check_counter)."""
    close = text.rfind(")")
    if close < 0:
        return text.strip(), None
    tail = text[close + 1 :].strip()
    if not tail:
        return text.strip(), None
    match = re.fullmatch(r"=\s*\$?([A-Za-z_]\w*)", tail)
    if match is None:
        raise _LineError(f"unexpected text after the action: '{tail}'")
    return text[: close + 1].strip(), match.group(1)


def _parse_action_and_handle(text: str) -> tuple[ActionRef, str | None]:
    body, handle = _split_handle(text)
    return _parse_action(body), handle


def _parse_action(text: str) -> ActionRef:
    """``NAME(PARAM:VALUE, ...)``, the whole of text."""
    name, paren, rest = text.partition("(")
    name = name.strip()
    if not paren or not re.fullmatch(r"[A-Za-z_$][\w.$]*", name):
        raise _LineError(f"expected ACTION(PARAM:VALUE, ...), found '{text}'")
    rest = rest.strip()
    if not rest.endswith(")"):
        raise _LineError(f"missing ')' after the arguments of action '{name}'")
    inner = rest[:-1].strip()
    args: list[tuple[str, Number]] = []
    if inner:
        for part in inner.split(","):
            param, colon, value = part.partition(":")
            param = param.strip()
            if not colon or not re.fullmatch(r"[A-Za-z_$][\w$]*", param):
                raise _LineError(f"expected PARAM:VALUE in the arguments of '{name}': '{part}'")
            if any(param == seen for seen, _ in args):
                raise _LineError(f"parameter '{param}' of '{name}' is given twice")
            args.append((param, parse_number(value.strip())))
    return ActionRef(name, tuple(args))


def _parse_setdefault(rest: str, number: int) -> SetDefault:
    table, _, action = rest.partition(" ")
    if not table or not action.strip():
        raise _LineError("setdefault needs a table and an action: setdefault TABLE ACTION(...)")
    return SetDefault(number, table, _parse_action(action.strip()))


def _parse_remove(rest: str, number: int) -> RemoveAll:
    if rest.lower() != "all":
        raise _LineError("only 'remove all' is supported")
    return RemoveAll(number)


# --------------------------------------------------------------- packets


def _parse_packet(rest: str, number: int) -> Packet:
    port_text, _, data = rest.partition(" ")
    port = _port(port_text)
    # An empty packet is allowed, as p4c's driver allows it: the parser sees zero bytes.
    digits = "".join(data.split())
    if digits and not re.fullmatch(r"[0-9A-Fa-f]+", digits):
        bad = re.search(r"[^0-9A-Fa-f]", digits)
        assert bad is not None
        raise _LineError(f"packet data is not hex: '{bad.group(0)}'")
    # Like p4c's driver: an odd last digit becomes a byte of its own.
    payload = bytes(int(digits[i : i + 2], 16) for i in range(0, len(digits), 2))
    return Packet(number, port, payload)


def _parse_expect(rest: str, number: int) -> Expect:
    port_text, _, data = rest.partition(" ")
    port = _port(port_text)
    digits = "".join(data.split()).upper()
    if not digits:
        return Expect(number, port, None)
    exact = digits.endswith("$")
    if exact:
        digits = digits[:-1]
    if not re.fullmatch(r"[0-9A-F*]*", digits):
        bad = re.search(r"[^0-9A-F*]", digits)
        assert bad is not None
        raise _LineError(f"expected packet data is not hex: '{bad.group(0)}'")
    return Expect(number, port, digits, exact)


def _port(text: str) -> int:
    if not text.isdigit():
        raise _LineError(f"expected a port number, found '{text}'" if text else "missing port")
    return int(text)


def _parse_no_packet(rest: str, number: int) -> NoPacket:
    _no_arguments("no_packet", rest)
    return NoPacket(number)


def _parse_wait(rest: str, number: int) -> Wait:
    _no_arguments("wait", rest)
    return Wait(number)


def _no_arguments(command: str, rest: str) -> None:
    if rest:
        raise _LineError(f"{command} takes no arguments, found '{rest}'")


# ------------------------------------------------------------- externs

_OPS = ("==", "!=", "<=", ">=", "<", ">")


def _parse_check_counter(rest: str, number: int) -> CounterRead:
    match = re.match(r"([A-Za-z_$][\w.$\[\]]*)\s*\(\s*([^)\s]+)\s*\)\s*(.*)$", rest)
    if match is None:
        raise _LineError("expected check_counter NAME(INDEX) [packets|bytes OP NUMBER]")
    name, index_text, tail = match.groups()
    index: int | str
    if index_text.startswith("$") or not index_text[0].isdigit():
        index = index_text.lstrip("$")
    else:
        index = _integer(index_text, "counter index")
    checks = _comparisons(tail.split(), ("packets", "bytes"))
    return CounterRead(number, name, index, checks)


def _parse_counter_read(rest: str, number: int) -> CounterRead:
    words = rest.split()
    if len(words) < 2:
        raise _LineError("expected counter_read NAME INDEX [packets|bytes OP NUMBER]...")
    index = _integer(words[1], "counter index")
    return CounterRead(number, words[0], index, _comparisons(words[2:], ("packets", "bytes")))


def _parse_counter_write(rest: str, number: int) -> CounterWrite:
    words = _exactly(rest, 4, "counter_write NAME INDEX PACKETS BYTES")
    ints = [_integer(w, "counter_write argument") for w in words[1:]]
    return CounterWrite(number, words[0], ints[0], ints[1], ints[2])


def _parse_counter_reset(rest: str, number: int) -> CounterReset:
    words = _exactly(rest, 1, "counter_reset NAME")
    return CounterReset(number, words[0])


def _parse_register_read(rest: str, number: int) -> RegisterRead:
    words = rest.split()
    if len(words) < 2:
        raise _LineError("expected register_read NAME INDEX [OP NUMBER]")
    index = _integer(words[1], "register index")
    tail = words[2:]
    if tail and tail[0] in _OPS:
        tail = ["value", *tail]
    return RegisterRead(number, words[0], index, _comparisons(tail, ("value",)))


def _parse_register_write(rest: str, number: int) -> RegisterWrite:
    words = _exactly(rest, 3, "register_write NAME INDEX VALUE")
    index = _integer(words[1], "register index")
    return RegisterWrite(number, words[0], index, _integer(words[2], "register value"))


def _parse_register_reset(rest: str, number: int) -> RegisterReset:
    words = _exactly(rest, 1, "register_reset NAME")
    return RegisterReset(number, words[0])


def _parse_meter_set_rates(rest: str, number: int) -> MeterSetRates:
    words = rest.split()
    if len(words) < 3:
        raise _LineError("expected meter_set_rates NAME INDEX RATE:BURST [RATE:BURST]")
    index: int | str = (
        words[1].lstrip("$") if not words[1][0].isdigit() else _integer(words[1], "meter index")
    )
    rates: list[tuple[float, int]] = []
    for word in words[2:]:
        rate, colon, burst = word.partition(":")
        try:
            rates.append((float(rate), int(burst)))
        except ValueError:
            raise _LineError(f"expected RATE:BURST, found '{word}'") from None
        if not colon:
            raise _LineError(f"expected RATE:BURST, found '{word}'")
    return MeterSetRates(number, words[0], index, tuple(rates))


def _comparisons(words: list[str], fields: tuple[str, ...]) -> tuple[Comparison, ...]:
    if len(words) % 3:
        raise _LineError(f"expected {' | '.join(fields)} OP NUMBER, found '{' '.join(words)}'")
    checks: list[Comparison] = []
    for i in range(0, len(words), 3):
        field, op, value = words[i : i + 3]
        if field.lower() not in fields:
            raise _LineError(f"expected {' or '.join(fields)}, found '{field}'")
        if op not in _OPS:
            raise _LineError(f"expected one of {' '.join(_OPS)}, found '{op}'")
        checks.append(Comparison(field.lower(), op, _integer(value, field)))
    return tuple(checks)


# -------------------------------------------------- PRE and mirroring


def _parse_mirroring_add(rest: str, number: int) -> MirroringAdd:
    words = _exactly(rest, 2, "mirroring_add SESSION PORT")
    return MirroringAdd(number, _integer(words[0], "session"), _integer(words[1], "port"))


def _parse_mc_mgrp_create(rest: str, number: int) -> McMgrpCreate:
    words = _exactly(rest, 1, "mc_mgrp_create MGRP")
    return McMgrpCreate(number, _integer(words[0], "multicast group"))


def _parse_mc_mgrp_destroy(rest: str, number: int) -> McMgrpDestroy:
    words = _exactly(rest, 1, "mc_mgrp_destroy MGRP")
    return McMgrpDestroy(number, _integer(words[0], "multicast group"))


def _parse_mc_node_create(rest: str, number: int) -> McNodeCreate:
    words = rest.split()
    if not words:
        raise _LineError("expected mc_node_create RID PORT...")
    ports = tuple(_integer(w, "port") for w in words[1:])
    return McNodeCreate(number, _integer(words[0], "rid"), ports)


def _parse_mc_node_update(rest: str, number: int) -> McNodeUpdate:
    words = rest.split()
    if not words:
        raise _LineError("expected mc_node_update HANDLE PORT...")
    ports = tuple(_integer(w, "port") for w in words[1:])
    return McNodeUpdate(number, _integer(words[0], "node handle"), ports)


def _parse_mc_node_destroy(rest: str, number: int) -> McNodeDestroy:
    words = _exactly(rest, 1, "mc_node_destroy HANDLE")
    return McNodeDestroy(number, _integer(words[0], "node handle"))


def _parse_mc_node_associate(rest: str, number: int) -> McNodeAssociate:
    words = _exactly(rest, 2, "mc_node_associate MGRP HANDLE")
    return McNodeAssociate(
        number, _integer(words[0], "multicast group"), _integer(words[1], "node handle")
    )


def _parse_mc_node_dissociate(rest: str, number: int) -> McNodeDissociate:
    words = _exactly(rest, 2, "mc_node_dissociate MGRP HANDLE")
    return McNodeDissociate(
        number, _integer(words[0], "multicast group"), _integer(words[1], "node handle")
    )


def _parse_member(rest: str, number: int) -> ProfileMember:
    match = re.match(r"(\S+)\s+(\S+)\s+(.+)$", rest)
    if match is None:
        raise _LineError("expected member PROFILE MEMBER_ID ACTION(...)")
    member_id = _integer(match.group(2), "member id")
    return ProfileMember(number, match.group(1), member_id, _parse_action(match.group(3).strip()))


def _parse_group(rest: str, number: int) -> ProfileGroup:
    words = rest.split()
    if len(words) < 2:
        raise _LineError("expected group PROFILE GROUP_ID MEMBER_ID...")
    members = tuple(_integer(w, "member id") for w in words[2:])
    return ProfileGroup(number, words[0], _integer(words[1], "group id"), members)


def _exactly(rest: str, count: int, usage: str) -> list[str]:
    words = rest.split()
    if len(words) != count:
        raise _LineError(f"expected {usage}")
    return words


def _integer(text: str, what: str) -> int:
    number = parse_number(text)
    if number.has_wildcards:
        raise _LineError(f"{what} cannot have '*' digits: '{text}'")
    return number.value


# --------------------------------------------------------------- numbers

_BASES = {"0x": (16, 4, "0123456789abcdef"), "0b": (2, 1, "01"), "0o": (8, 3, "01234567")}


def parse_number(text: str) -> Number:
    """A decimal, 0x/0b/0o literal (``*`` digits allowed) or a dotted IPv4 address."""
    lower = text.lower()
    base_info = _BASES.get(lower[:2])
    if base_info is not None:
        radix, bits_per_digit, alphabet = base_info
        digits = lower[2:].replace("_", "")
        if not digits or any(d not in alphabet and d != "*" for d in digits):
            raise _LineError(f"bad number '{text}'")
        digit_mask = (1 << bits_per_digit) - 1
        value = care = 0
        for digit in digits:
            value <<= bits_per_digit
            care <<= bits_per_digit
            if digit != "*":
                value |= int(digit, radix)
                care |= digit_mask
        return Number(value, care, bits_per_digit * len(digits), text)
    if re.fullmatch(r"-?\d+", text):
        return Number(int(text), -1, None, text)
    if re.fullmatch(r"\d+\.\d+\.\d+\.\d+", text):
        octets = [int(o) for o in text.split(".")]
        if any(o > 255 for o in octets):
            raise _LineError(f"bad IPv4 address '{text}'")
        return Number(int.from_bytes(bytes(octets), "big"), (1 << 32) - 1, 32, text)
    raise _LineError(f"bad number '{text}'")


def _parse_key_value(text: str) -> KeyValue:
    if not text:
        raise _LineError("missing key value after ':'")
    if text == "*":
        return Wildcard()
    if "&&&" in text:
        value, _, mask = text.partition("&&&")
        return Masked(parse_number(value), parse_number(mask), text)
    if "->" in text:
        low, _, high = text.partition("->")
        return Span(parse_number(low), parse_number(high), text)
    if "/" in text:
        value, _, length = text.partition("/")
        if not length.isdigit():
            raise _LineError(f"bad prefix length in '{text}'")
        return Prefix(parse_number(value), int(length), text)
    return parse_number(text)


_HANDLERS: dict[str, Callable[[str, int], Command]] = {
    "add": _parse_add,
    "setdefault": _parse_setdefault,
    "remove": _parse_remove,
    "packet": _parse_packet,
    "expect": _parse_expect,
    "no_packet": _parse_no_packet,
    "wait": _parse_wait,
    "check_counter": _parse_check_counter,
    "counter_read": _parse_counter_read,
    "counter_write": _parse_counter_write,
    "counter_reset": _parse_counter_reset,
    "register_read": _parse_register_read,
    "register_write": _parse_register_write,
    "register_reset": _parse_register_reset,
    "meter_set_rates": _parse_meter_set_rates,
    "mirroring_add": _parse_mirroring_add,
    "mc_mgrp_create": _parse_mc_mgrp_create,
    "mc_mgrp_destroy": _parse_mc_mgrp_destroy,
    "mc_node_create": _parse_mc_node_create,
    "mc_node_update": _parse_mc_node_update,
    "mc_node_destroy": _parse_mc_node_destroy,
    "mc_node_associate": _parse_mc_node_associate,
    "mc_node_dissociate": _parse_mc_node_dissociate,
    "member": _parse_member,
    "group": _parse_group,
}
