"""P4Info of small v1model programs written inline, one p4c rule per test.

Each expectation is derived by hand from what p4c's P4Runtime serializer does
(the rule is named in the test); ids are computed with p4c's formula.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from finsy.proto import p4i

from softswitch import p4info
from softswitch.p4info.ids import Prefix, jenkins_hash
from tests.support.v1model import v1model_program

HEADERS = """
header h_t { bit<8> f; bit<8> g; }
struct headers { h_t h; }
struct meta { bit<8> x; }
"""

Compile = Callable[..., p4i.P4Info]


@pytest.fixture
def compile_p4(tmp_path: Path) -> Compile:
    """The P4Info of a v1model program whose ingress (and top-level declarations) are given."""

    def build(ingress: str, decls: str = "", egress: str = "apply { }") -> p4i.P4Info:
        path = tmp_path / "prog.p4"
        path.write_text(v1model_program(HEADERS + decls, ingress, egress=egress))
        return p4info.p4info_of(p4info.load(str(path)))

    return build


def p4c_id(prefix: Prefix, name: str) -> int:
    return (prefix << 24) | (jenkins_hash(name) & 0xFFFFFF)


# -- type_info: present exactly when p4c calls P4Info::mutable_type_info() ----

NO_PARAMS = "action a() { m.x = 1; } apply { a(); }"


def test_no_type_info_for_parameterless_actions_and_no_tables(compile_p4: Compile) -> None:
    info = compile_p4(NO_PARAMS)
    assert [a.preamble.name for a in info.actions] == ["IG.a"]
    assert not info.HasField("type_info")
    assert "type_info" not in p4info.to_text(info)


@pytest.mark.parametrize(
    "ingress",
    [
        # a table (getMatchFields and addTableProperties), even without a key
        "action a() { m.x = 1; } table t { actions = { a; } } apply { t.apply(); }",
        # an action parameter (TypeSpecConverter on its type)
        "action a(bit<8> v) { m.x = v; } apply { a(1); }",
        # any declared extern instance (addExternInstance), even one never used
        "counter(8, CounterType.packets) c; " + NO_PARAMS,
        # an extern function called from a control's apply block or action
        "action a() { mark_to_drop(sm); } apply { a(); }",
        "apply { mark_to_drop(sm); }",
    ],
)
def test_empty_type_info_once_p4c_touches_it(compile_p4: Compile, ingress: str) -> None:
    info = compile_p4(ingress)
    assert info.HasField("type_info")
    assert p4info.to_text(info).endswith("type_info {\n}\n")


def test_extern_function_inside_a_function_counts(compile_p4: Compile) -> None:
    # p4c inlines functions before generating P4Info
    decls = "void drop_it(inout standard_metadata_t s) { mark_to_drop(s); }"
    info = compile_p4("apply { drop_it(sm); }", decls)
    assert info.HasField("type_info")


# -- which actions P4Info lists --------------------------------------------


def test_action_only_called_by_actions_is_inlined_away(compile_p4: Compile) -> None:
    # p4c's front-end inlines action calls made in actions, then removes the
    # declarations nothing refers to any more; actions called from apply stay.
    ingress = """
        action inner(bit<8> v) { m.x = v; }
        action outer() { inner(3); }
        action direct() { inner(4); }
        table t { key = { hdr.h.f: exact; } actions = { outer; } }
        apply { t.apply(); direct(); }
    """
    info = compile_p4(ingress)
    # the control's copy of the top-level NoAction (the table's implicit
    # default) comes first, then the control's own actions in declaration order
    assert [a.preamble.name for a in info.actions] == ["NoAction", "IG.outer", "IG.direct"]


def test_digest_in_an_inlined_action_is_found(compile_p4: Compile) -> None:
    decls = "struct learn_t { bit<8> f; }"
    ingress = """
        action inner() { digest<learn_t>(1, { hdr.h.f }); }
        action outer() { inner(); }
        table t { key = { hdr.h.f: exact; } actions = { outer; } }
        apply { t.apply(); }
    """
    info = compile_p4(ingress, decls)
    assert [d.preamble.name for d in info.digests] == ["learn_t"]
    assert info.digests[0].preamble.id == p4c_id(Prefix.DIGEST, "learn_t")


def test_top_level_instances_come_first(compile_p4: Compile) -> None:
    # p4c walks the evaluated blocks breadth first from the top-level block,
    # whose own instances precede everything the package's blocks declare
    decls = "counter(8, CounterType.packets) top_c;"
    ingress = "counter(4, CounterType.bytes) c; apply { top_c.count(1); c.count(0); }"
    info = compile_p4(ingress, decls)
    assert [(c.preamble.name, c.preamble.alias, c.size) for c in info.counters] == [
        ("top_c", "top_c", 8),
        ("IG.c", "c", 4),
    ]
    assert info.counters[0].preamble.id == p4c_id(Prefix.COUNTER, "top_c")


# -- nested controls are inlined before P4Info ------------------------------

NESTED_DECLS = """
control Inner(inout headers hdr) {
    action ia(bit<8> v) { hdr.h.g = v; }
    table it { key = { hdr.h.f: exact; } actions = { ia; } }
    apply { it.apply(); }
}
control Direct(inout headers hdr) {
    action da() { hdr.h.g = 2; }
    table dt { key = { hdr.h.g: exact; } actions = { da; } }
    apply { dt.apply(); }
}
"""

NESTED_INGRESS = """
    action a1() { m.x = 1; }
    table t1 { key = { hdr.h.f: exact; } actions = { a1; } }
    Inner() inner;
    action a2() { m.x = 2; }
    table t2 { key = { hdr.h.g: exact; } actions = { a2; } }
    apply { Direct.apply(hdr); t1.apply(); inner.apply(hdr); t2.apply(); }
"""

NESTED_EGRESS = """
    action ea() { m.x = 3; }
    table et { key = { m.x: exact; } actions = { ea; } }
    apply { et.apply(); }
"""


def test_nested_instances_are_inlined_in_place(compile_p4: Compile) -> None:
    # p4c's front-end inlines `inner` where it is declared and appends the
    # instance it creates for `Direct.apply()` after every local of IG; only
    # then does P4Info walk IG's tables, before EG's.
    info = compile_p4(NESTED_INGRESS, NESTED_DECLS, NESTED_EGRESS)
    assert [t.preamble.name for t in info.tables] == [
        "IG.t1",
        "IG.inner.it",
        "IG.t2",
        "IG.Direct.dt",
        "EG.et",
    ]
    # the copy of the top-level NoAction (implicit default of every table)
    # first, then each control's actions where the inlined declarations put them
    assert [a.preamble.name for a in info.actions] == [
        "NoAction",
        "IG.a1",
        "IG.inner.ia",
        "IG.a2",
        "IG.Direct.da",
        "EG.ea",
    ]
    assert info.tables[1].preamble.id == p4c_id(Prefix.TABLE, "IG.inner.it")
    assert info.tables[1].preamble.alias == "it"


def test_sub_parser_value_sets_are_inlined(compile_p4: Compile, tmp_path: Path) -> None:
    sub_parser = """
parser Sub(packet_in pk, inout headers hdr) {
    value_set<bit<8>>(4) sub_vs;
    state start { transition select(hdr.h.g) { sub_vs: accept; default: reject; } }
}
"""
    parser = """
    value_set<bit<8>>(2) top_vs;
    Sub() sub;
    state start {
        pk.extract(hdr.h);
        transition select(hdr.h.f) { top_vs: next; default: accept; }
    }
    state next { sub.apply(pk, hdr); transition accept; }
"""
    source = v1model_program(HEADERS + sub_parser, parser=parser)
    path = tmp_path / "vs.p4"
    path.write_text(source)
    info = p4info.p4info_of(p4info.load(str(path)))
    assert [(v.preamble.name, v.size) for v in info.value_sets] == [
        ("P.top_vs", 2),
        ("P.sub.sub_vs", 4),
    ]


def test_is_valid_key_is_named_dollar_valid(compile_p4: Compile) -> None:
    # p4c's TableKeyNames: `$valid$` stands for isValid(); an @name wins
    ingress = """
        action a() { m.x = 1; }
        table t {
            key = {
                hdr.h.isValid(): exact;
                hdr.h.f: ternary @name("eff");
                hdr.h.g[3:0]: lpm;
            }
            actions = { a; }
        }
        apply { t.apply(); }
    """
    info = compile_p4(ingress)
    assert [(f.name, f.bitwidth) for f in info.tables[0].match_fields] == [
        ("hdr.h.$valid$", 1),
        ("eff", 8),
        ("hdr.h.g[3:0]", 4),
    ]


def test_profile_constructed_in_a_table_property(compile_p4: Compile) -> None:
    # p4c names it after the property's @name, as written (no control prefix),
    # and takes the property's annotations as the profile's
    ingress = """
        action a(bit<8> v) { m.x = v; }
        table t {
            key = { hdr.h.f: exact; hdr.h.g: selector; }
            actions = { a; }
            @name("sel") @max_group_size(16)
            implementation = action_selector(HashAlgorithm.crc16, 64, 14);
        }
        apply { t.apply(); }
    """
    info = compile_p4(ingress)
    (profile,) = info.action_profiles
    assert (profile.preamble.name, profile.preamble.alias) == ("sel", "sel")
    assert profile.preamble.id == p4c_id(Prefix.ACTION_PROFILE, "sel")
    assert list(profile.preamble.annotations) == []  # selector annotations become fields
    assert (profile.with_selector, profile.size, profile.max_group_size) == (True, 64, 16)
    assert profile.HasField("sum_of_weights")
    assert info.tables[0].implementation_id == profile.preamble.id
    assert list(profile.table_ids) == [info.tables[0].preamble.id]
