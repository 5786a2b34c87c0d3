"""Ids and aliases, checked against ids that p4c printed in its P4Info outputs."""

from __future__ import annotations

import pytest

from softswitch.errors import P4SourceError
from softswitch.p4info.ids import Prefix, Symbol, assign_ids, jenkins_hash

# (type, name, id) as they appear in p4c's testdata/p4_16_samples_outputs/*.p4info.txtpb
P4C_IDS = [
    (Prefix.ACTION, "NoAction", 21257015),
    (Prefix.ACTION, "IngressI.drop", 23455883),
    (Prefix.TABLE, "IngressI.indirect", 46872340),
    (Prefix.TABLE, "IngressI.indirect_ws", 38116258),
    (Prefix.ACTION_PROFILE, "ap", 294074782),
    (Prefix.ACTION_PROFILE, "ap_ws", 300324846),
    (Prefix.REGISTER, "ingress.flowlet_id", 384519412),
    (Prefix.REGISTER, "ingress.flowlet_lasttime", 375147533),
    (Prefix.CONTROLLER_HEADER, "packet_out_t", 75327753),
    (Prefix.TABLE, "ingress.c.t", 43577110),
]


def test_prefixes_are_those_of_p4info_proto() -> None:
    from finsy.proto import p4i

    for prefix in Prefix:
        assert p4i.P4Ids.Prefix.Value(prefix.name) == prefix.value


def test_jenkins_one_at_a_time_reference_values() -> None:
    # Values of the published algorithm (Wikipedia's test vectors).
    assert jenkins_hash("a") == 0xCA2E9442
    assert jenkins_hash("The quick brown fox jumps over the lazy dog") == 0x519E91F5
    assert jenkins_hash("") == 0


@pytest.mark.parametrize(("prefix", "name", "expected"), P4C_IDS)
def test_ids_match_p4c(prefix: Prefix, name: str, expected: int) -> None:
    table = assign_ids([Symbol(prefix, name)])
    assert table.id_of(prefix, name) == expected
    assert expected == (prefix << 24) | (jenkins_hash(name) & 0xFFFFFF)


def test_noaction_id_is_0x01445b37() -> None:
    assert assign_ids([Symbol(Prefix.ACTION, "NoAction")]).id_of(Prefix.ACTION, "NoAction") == (
        0x01445B37
    )


def test_hash_collision_probes_by_one_in_byte_sorted_order() -> None:
    # "c.t1626" and "c.t3872" share their low 24 hash bits (3811124).
    assert jenkins_hash("c.t1626") & 0xFFFFFF == jenkins_hash("c.t3872") & 0xFFFFFF == 3811124
    base = (Prefix.TABLE << 24) | 3811124
    for order in (["c.t3872", "c.t1626"], ["c.t1626", "c.t3872"]):
        table = assign_ids(Symbol(Prefix.TABLE, n) for n in order)
        assert table.id_of(Prefix.TABLE, "c.t1626") == base
        assert table.id_of(Prefix.TABLE, "c.t3872") == base + 1


def test_explicit_id_takes_precedence_and_pushes_the_hashed_name() -> None:
    hashed = (Prefix.ACTION << 24) | (jenkins_hash("NoAction") & 0xFFFFFF)
    table = assign_ids(
        [
            Symbol(Prefix.ACTION, "NoAction"),
            Symbol(Prefix.ACTION, "mine", explicit_id=hashed & 0xFFFFFF),
        ]
    )
    assert table.id_of(Prefix.ACTION, "mine") == hashed
    assert table.id_of(Prefix.ACTION, "NoAction") == hashed + 1


def test_one_id_space_for_all_types() -> None:
    # An explicit id of another prefix never collides, but equal full ids do.
    with pytest.raises(P4SourceError, match="assigned to multiple declarations"):
        assign_ids(
            [
                Symbol(Prefix.TABLE, "a", explicit_id=5),
                Symbol(Prefix.TABLE, "b", explicit_id=0x02000005),
            ]
        )


def test_explicit_id_with_wrong_prefix_is_an_error() -> None:
    with pytest.raises(P4SourceError, match="wrong 8-bit prefix"):
        assign_ids([Symbol(Prefix.TABLE, "t", explicit_id=0x01000001)])


def test_explicit_id_zero_gets_the_bare_prefix() -> None:
    # p4c ors the prefix into any @id, so @id(0) is the prefix alone, not "invalid".
    table = assign_ids([Symbol(Prefix.COUNTER, "x", explicit_id=0)])
    assert table.id_of(Prefix.COUNTER, "x") == 0x12000000


def test_duplicate_symbol_keeps_the_first() -> None:
    table = assign_ids(
        [Symbol(Prefix.ACTION, "a", explicit_id=7), Symbol(Prefix.ACTION, "a", explicit_id=9)]
    )
    assert table.id_of(Prefix.ACTION, "a") == 0x01000007


def test_alias_is_shortest_unique_suffix_over_all_types() -> None:
    table = assign_ids(
        [
            Symbol(Prefix.ACTION, "ingress._drop"),
            Symbol(Prefix.ACTION, "egress._drop"),
            Symbol(Prefix.ACTION, "ingress.set_nhop"),
            Symbol(Prefix.TABLE, "ingress.c1.t"),
            Symbol(Prefix.TABLE, "ingress.c2.t"),
            Symbol(Prefix.COUNTER, "ingress.fwd"),
            Symbol(Prefix.TABLE, "egress.fwd"),
            Symbol(Prefix.ACTION, "NoAction"),
        ]
    )
    assert table.alias_of("ingress._drop") == "ingress._drop"
    assert table.alias_of("ingress.set_nhop") == "set_nhop"
    assert table.alias_of("ingress.c1.t") == "c1.t"
    # A counter and a table share the last component: both need two.
    assert table.alias_of("ingress.fwd") == "ingress.fwd"
    assert table.alias_of("egress.fwd") == "egress.fwd"
    assert table.alias_of("NoAction") == "NoAction"


def test_alias_of_a_name_that_is_a_suffix_of_another() -> None:
    table = assign_ids([Symbol(Prefix.ACTION, "c"), Symbol(Prefix.ACTION, "b.c")])
    assert table.alias_of("c") == "c"
    assert table.alias_of("b.c") == "b.c"
