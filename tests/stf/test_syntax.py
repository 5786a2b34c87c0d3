"""The STF reader: commands, values and located errors for bad lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from softswitch.errors import StfError
from softswitch.stf import syntax
from softswitch.stf.syntax import parse_stf, parse_stf_file


def one(text: str) -> syntax.Command:
    script = parse_stf(text, "t.stf")
    assert len(script.commands) == 1
    return script.commands[0]


def test_comments_and_blank_lines_are_skipped_and_lines_are_counted() -> None:
    script = parse_stf("# header\n\n  packet 1 00 # trailing\n\nwait\n", "t.stf")
    assert [type(c) for c in script.commands] == [syntax.Packet, syntax.Wait]
    assert [c.line for c in script.commands] == [3, 5]
    assert script.file == "t.stf"


def test_add_with_priority_keys_action_and_handle() -> None:
    cmd = one("add ingress.t 10 hdr.f:0x**01 data.$valid$:1 ingress.a(x:0x7f, y:2) = A")
    assert isinstance(cmd, syntax.Add)
    assert cmd.table == "ingress.t"
    assert cmd.priority == 10
    assert cmd.handle == "A"
    (k1, v1), (k2, v2) = cmd.keys
    assert k1 == "hdr.f" and isinstance(v1, syntax.Number)
    assert (v1.value, v1.care, v1.bits) == (0x0001, 0x00FF, 16)
    assert k2 == "data.$valid$" and isinstance(v2, syntax.Number) and v2.bits is None
    assert isinstance(cmd.action, syntax.ActionRef)
    assert cmd.action.name == "ingress.a"
    assert [(n, v.value) for n, v in cmd.action.args] == [("x", 0x7F), ("y", 2)]


def test_add_without_priority_and_with_spaces_in_arguments() -> None:
    cmd = one("add t k:5 set( port : 2 , v:0b1*1 )")
    assert isinstance(cmd, syntax.Add)
    assert cmd.priority is None
    assert isinstance(cmd.action, syntax.ActionRef)
    assert cmd.action.args[0][0] == "port"
    v = cmd.action.args[1][1]
    assert (v.value, v.care, v.bits) == (0b101, 0b101, 3)


def test_key_value_forms() -> None:
    cmd = one("add t a:10.0.0.0/8 b:0x0a&&&0xf0 c:1->5 d:* e:-3 f:0o7 a()")
    assert isinstance(cmd, syntax.Add)
    values = dict(cmd.keys)
    a = values["a"]
    assert isinstance(a, syntax.Prefix) and a.prefix_len == 8 and a.value.value == 0x0A000000
    b = values["b"]
    assert isinstance(b, syntax.Masked) and (b.value.value, b.mask.value) == (0x0A, 0xF0)
    c = values["c"]
    assert isinstance(c, syntax.Span) and (c.low.value, c.high.value) == (1, 5)
    assert isinstance(values["d"], syntax.Wildcard)
    e = values["e"]
    assert isinstance(e, syntax.Number) and e.value == -3
    f = values["f"]
    assert isinstance(f, syntax.Number) and (f.value, f.bits) == (7, 3)


def test_validity_key_named_with_call_syntax_is_a_key_not_an_action() -> None:
    cmd = one("add t h.isValid():1 a()")
    assert isinstance(cmd, syntax.Add)
    assert cmd.keys[0][0] == "h.isValid()"
    assert isinstance(cmd.action, syntax.ActionRef) and cmd.action.name == "a"


def test_key_names_with_stack_indices_and_slices() -> None:
    cmd = one("add t hdr.s[1].f:1 ipv4.dstAddr[31:16]:0x0a01 extra$0.h:2 a()")
    assert isinstance(cmd, syntax.Add)
    assert [name for name, _ in cmd.keys] == ["hdr.s[1].f", "ipv4.dstAddr[31:16]", "extra$0.h"]
    assert [v.value for _, v in cmd.keys] == [1, 0x0A01, 2]  # type: ignore[union-attr]


def test_profile_member_and_group_references() -> None:
    member = one("add t k:1 @member(7)")
    group = one("add t k:2 @group(3) = G")
    assert isinstance(member, syntax.Add) and member.action == syntax.MemberRef(7)
    assert (
        isinstance(group, syntax.Add) and group.action == syntax.GroupRef(3) and group.handle == "G"
    )
    assert one("member ap 7 a(x:1)") == syntax.ProfileMember(
        1, "ap", 7, syntax.ActionRef("a", (("x", syntax.parse_number("1")),))
    )
    assert one("group sel 3 1 2 7") == syntax.ProfileGroup(1, "sel", 3, (1, 2, 7))


def test_setdefault() -> None:
    cmd = one("setdefault ingress.t drop()")
    assert cmd == syntax.SetDefault(1, "ingress.t", syntax.ActionRef("drop", ()))


def test_packet_data_ignores_spaces_and_case() -> None:
    cmd = one("packet 3 0a0B 0c 0D")
    assert cmd == syntax.Packet(1, 3, bytes([0x0A, 0x0B, 0x0C, 0x0D]))


def test_packet_with_an_odd_digit_count_ends_in_a_byte_of_one_digit() -> None:
    cmd = one("packet 0 0102 3")
    assert isinstance(cmd, syntax.Packet) and cmd.data == bytes([1, 2, 3])


def test_expect_patterns() -> None:
    plain = one("expect 1 0a0b ** 0C")
    assert plain == syntax.Expect(1, 1, "0A0B**0C", False)
    exact = one("expect 2 0a0b $")
    assert exact == syntax.Expect(1, 2, "0A0B", True)
    anything = one("expect 4")
    assert anything == syntax.Expect(1, 4, None, False)


def test_counter_register_and_pre_commands() -> None:
    cc = one("check_counter ingress.c($A) bytes >= 64")
    assert cc == syntax.CounterRead(1, "ingress.c", "A", (syntax.Comparison("bytes", ">=", 64),))
    idx = one("check_counter c(10) packets == 2")
    assert isinstance(idx, syntax.CounterRead) and idx.index == 10
    read = one("counter_read c 3 packets == 1 bytes == 60")
    assert isinstance(read, syntax.CounterRead) and len(read.checks) == 2
    assert one("register_read r 2 == 0x10") == syntax.RegisterRead(
        1, "r", 2, (syntax.Comparison("value", "==", 16),)
    )
    assert one("register_write r 2 5") == syntax.RegisterWrite(1, "r", 2, 5)
    assert one("mirroring_add 5 3") == syntax.MirroringAdd(1, 5, 3)
    assert one("mc_node_create 0 1 2 3") == syntax.McNodeCreate(1, 0, (1, 2, 3))
    assert one("mc_node_associate 1 0") == syntax.McNodeAssociate(1, 1, 0)
    assert one("remove all") == syntax.RemoveAll(1)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("bogus 1 2", "unknown STF command 'bogus'"),
        ("add t k:1", "add needs an action"),
        ("add t k:1 a(x:1", "missing ')'"),
        ("add t k:1 a(x)", "expected PARAM:VALUE"),
        ("add t k:1 a(x:1, x:2)", "given twice"),
        ("add t k:0xZZ a()", "bad number '0xZZ'"),
        ("add t k:1 a() junk", "unexpected text after the action"),
        ("add t k:1/x a()", "bad prefix length"),
        ("add t 5 6 a()", "expected KEY:VALUE or ACTION"),
        ("packet x 00", "expected a port number"),
        ("packet 1 0g", "packet data is not hex: 'g'"),
        ("expect 1 0q", "not hex: 'Q'"),
        ("check_counter c", "expected check_counter NAME(INDEX)"),
        ("check_counter c(1) packets ~ 3", "expected one of"),
        ("register_write r 1", "expected register_write NAME INDEX VALUE"),
        ("mirroring_add 1", "expected mirroring_add SESSION PORT"),
        ("remove t", "only 'remove all'"),
        ("wait 3", "wait takes no arguments"),
        ("register_write r 0x1* 3", "cannot have '*' digits"),
    ],
)
def test_bad_lines_are_located_errors(text: str, message: str) -> None:
    source = f"# first line\npacket 0 00\n{text}\n"
    with pytest.raises(StfError) as info:
        parse_stf(source, "tests/bad.stf")
    error = info.value
    assert (error.file, error.line) == ("tests/bad.stf", 3)
    assert message in error.message
    assert str(error).startswith("tests/bad.stf:3: error: ")


def test_missing_file_is_an_stf_error(tmp_path: Path) -> None:
    with pytest.raises(StfError, match="cannot read STF file"):
        parse_stf_file(tmp_path / "missing.stf")


def test_parse_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "a.stf"
    path.write_text("packet 0 00\nexpect 0 00\n")
    script = parse_stf_file(path)
    assert script.file == str(path)
    assert len(script.commands) == 2


def test_a_packet_without_data_is_an_empty_packet() -> None:
    (command,) = parse_stf("packet 0 \n").commands
    assert isinstance(command, syntax.Packet)
    assert (command.port, command.data) == (0, b"")
