"""Type-checking errors are located at the offending node with a clear message."""

from __future__ import annotations

from pathlib import Path

import pytest

from softswitch.errors import P4SourceError
from softswitch.frontend import load_program
from tests.support.v1model import DEFAULT_PARSER, v1model_program

DECLS = """
header h_t { bit<8> a; bit<16> w; }
struct headers { h_t h; }
struct meta { }
"""


def source(body: str = "apply { }", decls: str = "", parser: str = DEFAULT_PARSER) -> str:
    """A v1model program whose ingress control is ``body``, after ``decls``."""
    return v1model_program(DECLS + decls, body, parser)


BODY_MARK = "$BODY$"
BODY_LINE = source(BODY_MARK).split(BODY_MARK)[0].count("\n") + 1


def check_error(tmp_path: Path, body: str) -> P4SourceError:
    path = tmp_path / "bad.p4"
    path.write_text(source(body))
    with pytest.raises(P4SourceError) as info:
        load_program(str(path))
    assert info.value.loc.file.endswith("bad.p4")
    return info.value


@pytest.mark.parametrize(
    ("body", "message", "at"),
    [
        ("apply { hdr.h.a = hdr.h.w; }", "type mismatch: expected bit<8>, got bit<16>", "hdr.h.w"),
        ("apply { hdr.h.aa = 1; }", "no field 'aa' in header h_t; did you mean 'a'?", "hdr"),
        ("apply { hdr.h.a = hdr.h.a + hdr.h.w; }", "type mismatch: bit<8> + bit<16>", "hdr.h.a +"),
        (
            "apply { bit<8> x = undefined_name; }",
            "no declaration named 'undefined_name'",
            "undefined_name",
        ),
        ("apply { hdr.h.a = hdr.h.a[9:2]; }", "slice [9:2] out of range for bit<8>", "hdr.h.a["),
        ("apply { if (hdr.h.a) { } }", "type mismatch: expected bool, got bit<8>", "hdr"),
        (
            "action o(out bit<8> x) { x = 1; } apply { o(hdr.h.a + 1); }",
            "expression cannot be assigned",
            "hdr.h.a + 1",
        ),
        ("apply { hdr.h.a = hdr.h.a ++ 1; }", "concatenation needs widths", "1;"),
        ("apply { hdr.h.a = hdr.h.a / 0; }", "division by zero", "hdr.h.a /"),
        (
            "table t { key = { hdr.h.a: fuzzy; } actions = { NoAction; } } apply { t.apply(); }",
            "no match_kind named 'fuzzy'",
            "fuzzy",
        ),
        ("action a(bit<8> x) { } apply { a(); }", "missing argument for parameter 'x'", "a()"),
        ("apply { hdr.h.setValid(1); }", "setValid() takes no arguments", "hdr"),
    ],
)
def test_located_errors(tmp_path: Path, body: str, message: str, at: str) -> None:
    err = check_error(tmp_path, body)
    col = body.index(at) + 1
    assert message in err.message
    assert err.loc.line == BODY_LINE
    assert err.loc.col == col
    assert str(err).startswith(f"{err.loc.file}:{BODY_LINE}:{col}: error: ")


def test_shift_of_literal_by_runtime_amount(tmp_path: Path) -> None:
    err = check_error(tmp_path, "apply { hdr.h.a = 1 << hdr.h.a; }")
    assert "shift of an int literal" in err.message


def test_unknown_parser_state(tmp_path: Path) -> None:
    path = tmp_path / "state.p4"
    path.write_text(source(parser=DEFAULT_PARSER.replace("transition accept", "transition acept")))
    with pytest.raises(P4SourceError) as info:
        load_program(str(path))
    assert "no parser state named 'acept'; did you mean 'accept'?" in info.value.message


def test_control_plane_names(tmp_path: Path) -> None:
    body = """
    action drop() { mark_to_drop(sm); }
    @name(".global_t") table t1 { key = { hdr.h.a: exact; } actions = { drop; NoAction; } }
    @name("renamed") table t2 { key = { hdr.h.a: exact @name("alpha"); } actions = { drop; } }
    counter(4, CounterType.packets) c;
    apply { t1.apply(); t2.apply(); c.count(0); }
    """
    path = tmp_path / "names.p4"
    path.write_text(source(body))
    prog = load_program(str(path))
    assert [t.name for t in prog.tables] == ["global_t", "IG.renamed"]
    assert prog.tables[1].keys[0].name == "alpha"
    assert prog.tables[0].keys[0].name == "hdr.h.a"
    assert {a.name for a in prog.actions} == {"IG.drop", "NoAction"}
    assert [x.name for x in prog.externs] == ["IG.c"]
    assert prog.tables[0].size == 1024
    assert prog.tables[0].default_action.name == "NoAction"


UNUSED_OK = """
control Unused(inout headers hdr) {
    action a(bit<8> v) { hdr.h.a = v; }
    table t { key = { hdr.h.a: exact; } actions = { a; } }
    apply { t.apply(); }
}
control Generic<T>(inout T x) { apply { } }
bit<8> twice(in bit<8> v) { return v + v; }
action top_level(inout bit<8> v) { v = 1; }
"""


def test_unused_declarations_are_checked_but_left_out(tmp_path: Path) -> None:
    path = tmp_path / "ok.p4"
    path.write_text(source(decls=UNUSED_OK))
    program = load_program(str(path))
    assert program.tables == []
    assert [a.local_name for a in program.all_actions] == []
    assert program.functions == []


@pytest.mark.parametrize(
    ("decl", "message"),
    [
        (
            "control Unused(inout headers hdr) { apply { hdr.h.a = hdr.h.w; } }",
            "type mismatch: expected bit<8>, got bit<16>",
        ),
        ("action lonely(inout bit<8> v) { v = true; }", "type mismatch: expected bit<8>, got bool"),
        ("bit<8> f(in bit<8> v) { return v == 1; }", "type mismatch: expected bit<8>, got bool"),
        (
            "parser Q(packet_in pk, out headers hdr) { state start { transition nowhere; } }",
            "no parser state named 'nowhere'",
        ),
    ],
)
def test_unused_declarations_with_errors_are_rejected(
    tmp_path: Path, decl: str, message: str
) -> None:
    path = tmp_path / "bad.p4"
    path.write_text(source(decls=decl))
    with pytest.raises(P4SourceError) as info:
        load_program(str(path))
    assert message in info.value.message


def test_unused_local_action_with_an_error_is_rejected(tmp_path: Path) -> None:
    err = check_error(tmp_path, "action never(inout bit<8> v) { v = hdr.h.w; } apply { }")
    assert "type mismatch: expected bit<8>, got bit<16>" in err.message
