"""The P4Info writer: field rules and p4c's text layout, on hand-built models.

Expected texts are written from the rules of p4c's serializer (field order by
protobuf field number, two-space indent, the .txtpb header), not produced by the
code under test.
"""

from __future__ import annotations

import json

import pytest

from softswitch.errors import P4SourceError
from softswitch.p4info import model as info_model
from softswitch.p4info.emit import build_p4info, field_ids, to_binary, to_json, to_text
from softswitch.p4info.ids import Prefix, jenkins_hash

HEADER = "# proto-file: p4/config/v1/p4info.proto\n# proto-message: p4.config.v1.P4Info\n\n"


def pid(prefix: Prefix, name: str) -> int:
    return (prefix << 24) | (jenkins_hash(name) & 0xFFFFFF)


def ann(*texts: str) -> info_model.Annotations:
    return info_model.Annotations(
        tuple(info_model.Annotation(t[1:].split("(")[0], t) for t in texts)
    )


NOACTION = info_model.Action("NoAction", annotations=ann('@noWarn("unused")'))


def test_empty_program_is_header_pkg_info_and_empty_type_info() -> None:
    assert to_text(build_p4info(info_model.Model())) == (
        HEADER + 'pkg_info {\n  arch: "v1model"\n}\ntype_info {\n}\n'
    )


def test_field_ids_follow_p4c_allocator() -> None:
    assert field_ids([None, None, None]) == [1, 2, 3]
    assert field_ids([None, 1, None]) == [2, 1, 3]
    assert field_ids([5, None]) == [5, 2]
    assert field_ids([None, 2]) == [1, 2]


def _tiny() -> info_model.Model:
    brief = info_model.Annotations(
        (info_model.Annotation("brief", '@brief("dst")'),),
        doc=info_model.Documentation(brief="dst"),
    )
    return info_model.Model(
        pkg_info=info_model.PkgInfo(
            name="tiny.p4",
            version="1.0",
            annotations=info_model.Annotations(
                (info_model.Annotation("pkginfo", '@pkginfo(name="tiny.p4")'),),
                doc=info_model.Documentation(brief="Tiny"),
            ),
        ),
        tables=(
            info_model.Table(
                "ingress.acl",
                match_fields=(
                    info_model.MatchField("hdr.eth.type", 16, "ternary"),
                    info_model.MatchField("meta.sel", 8, "selector"),
                    info_model.MatchField("hdr.ip.dst", 32, "lpm", annotations=brief),
                ),
                action_refs=(
                    info_model.ActionRef("ingress.permit", ann("@tableonly")),
                    info_model.ActionRef("NoAction", ann("@defaultonly")),
                ),
                size=512,
                default_action=info_model.ActionCall("NoAction"),
                default_action_const=True,
                direct_counter="ingress.acl_counter",
                idle_timeout=True,
                annotations=ann('@name("acl")', "@id(9)", "@atomic"),
            ),
        ),
        actions=(
            NOACTION,
            info_model.Action(
                "ingress.permit",
                (info_model.Param("port", 9, explicit_id=5), info_model.Param("prio", 3)),
            ),
        ),
        direct_counters=(
            info_model.DirectCounter("ingress.acl_counter", "packets_and_bytes", "ingress.acl"),
        ),
        registers=(info_model.Register("ingress.r", info_model.NamedType("struct", "pair_t"), 16),),
        digests=(
            info_model.Digest("pair_t", info_model.NamedType("struct", "pair_t")),
            info_model.Digest("pair_t", info_model.NamedType("struct", "pair_t")),
        ),
        type_info=info_model.TypeInfo(
            structs=(
                (
                    "pair_t",
                    info_model.StructInfo(
                        (("a", info_model.BitsType(8)), ("b", info_model.BoolType()))
                    ),
                ),
            )
        ),
    )


def test_tiny_program_text() -> None:
    acl = pid(Prefix.TABLE, "ingress.acl")
    permit = pid(Prefix.ACTION, "ingress.permit")
    noaction = pid(Prefix.ACTION, "NoAction")
    counter = pid(Prefix.DIRECT_COUNTER, "ingress.acl_counter")
    expected = f"""pkg_info {{
  name: "tiny.p4"
  version: "1.0"
  doc {{
    brief: "Tiny"
  }}
  arch: "v1model"
}}
tables {{
  preamble {{
    id: {acl}
    name: "ingress.acl"
    alias: "acl"
    annotations: "@atomic"
  }}
  match_fields {{
    id: 1
    name: "hdr.eth.type"
    bitwidth: 16
    match_type: TERNARY
  }}
  match_fields {{
    id: 3
    name: "hdr.ip.dst"
    bitwidth: 32
    match_type: LPM
    doc {{
      brief: "dst"
    }}
  }}
  action_refs {{
    id: {permit}
    annotations: "@tableonly"
    scope: TABLE_ONLY
  }}
  action_refs {{
    id: {noaction}
    annotations: "@defaultonly"
    scope: DEFAULT_ONLY
  }}
  const_default_action_id: {noaction}
  initial_default_action {{
    action_id: {noaction}
  }}
  direct_resource_ids: {counter}
  size: 512
  idle_timeout_behavior: NOTIFY_CONTROL
}}
actions {{
  preamble {{
    id: {noaction}
    name: "NoAction"
    alias: "NoAction"
    annotations: "@noWarn(\\"unused\\")"
  }}
}}
actions {{
  preamble {{
    id: {permit}
    name: "ingress.permit"
    alias: "permit"
  }}
  params {{
    id: 5
    name: "port"
    bitwidth: 9
  }}
  params {{
    id: 2
    name: "prio"
    bitwidth: 3
  }}
}}
direct_counters {{
  preamble {{
    id: {counter}
    name: "ingress.acl_counter"
    alias: "acl_counter"
  }}
  spec {{
    unit: BOTH
  }}
  direct_table_id: {acl}
}}
registers {{
  preamble {{
    id: {pid(Prefix.REGISTER, "ingress.r")}
    name: "ingress.r"
    alias: "r"
  }}
  type_spec {{
    struct {{
      name: "pair_t"
    }}
  }}
  size: 16
}}
digests {{
  preamble {{
    id: {pid(Prefix.DIGEST, "pair_t")}
    name: "pair_t"
    alias: "pair_t"
  }}
  type_spec {{
    struct {{
      name: "pair_t"
    }}
  }}
}}
type_info {{
  structs {{
    key: "pair_t"
    value {{
      members {{
        name: "a"
        type_spec {{
          bitstring {{
            bit {{
              bitwidth: 8
            }}
          }}
        }}
      }}
      members {{
        name: "b"
        type_spec {{
          bool {{
          }}
        }}
      }}
    }}
  }}
}}
"""
    assert to_text(build_p4info(_tiny())) == HEADER + expected


def test_initial_default_action_arguments_are_full_width_bytes() -> None:
    model = info_model.Model(
        tables=(
            info_model.Table(
                "c.t",
                action_refs=(info_model.ActionRef("c.a"),),
                default_action=info_model.ActionCall("c.a", ((12, 10), (1, 1))),
            ),
        ),
        actions=(info_model.Action("c.a", (info_model.Param("x", 12), info_model.Param("y", 1))),),
    )
    text = to_text(build_p4info(model))
    assert "const_default_action_id" not in text
    assert (
        "  initial_default_action {\n"
        f"    action_id: {pid(Prefix.ACTION, 'c.a')}\n"
        '    arguments {\n      param_id: 1\n      value: "\\000\\n"\n    }\n'
        '    arguments {\n      param_id: 2\n      value: "\\001"\n    }\n'
        "  }\n"
    ) in text


def test_hidden_objects_take_ids_but_are_not_written() -> None:
    model = info_model.Model(
        tables=(info_model.Table("tbl_act", hidden=True), info_model.Table("c.t")),
        actions=(info_model.Action("act", hidden=True), info_model.Action("c.act")),
    )
    info = build_p4info(model)
    assert [t.preamble.name for t in info.tables] == ["c.t"]
    assert [a.preamble.name for a in info.actions] == ["c.act"]
    # "act" is a symbol too, so "c.act" needs two components.
    assert info.actions[0].preamble.alias == "c.act"


def test_action_profile_lists_tables_by_name_and_max_group_size() -> None:
    model = info_model.Model(
        tables=(
            info_model.Table("c.zeta", implementation="c.sel"),
            info_model.Table("c.alpha", implementation="c.sel"),
        ),
        action_profiles=(
            info_model.ActionProfile(
                "c.sel",
                64,
                with_selector=True,
                max_group_size=8,
                annotations=ann("@max_group_size(8)", "@my_anno"),
            ),
        ),
    )
    profile = build_p4info(model).action_profiles[0]
    assert list(profile.table_ids) == [pid(Prefix.TABLE, "c.alpha"), pid(Prefix.TABLE, "c.zeta")]
    assert profile.with_selector
    assert profile.max_group_size == 8
    # p4c gives a selector with @max_group_size the default sum-of-weights semantics.
    assert profile.WhichOneof("selector_size_semantics") == "sum_of_weights"
    assert list(profile.preamble.annotations) == ["@my_anno"]


def test_selector_size_semantics_sum_of_members() -> None:
    anns = ann('@selector_size_semantics("sum_of_members")', "@max_member_weight(40)")
    model = info_model.Model(
        action_profiles=(
            info_model.ActionProfile(
                "s",
                8,
                with_selector=True,
                max_group_size=4,
                selector_size_semantics="sum_of_members",
                max_member_weight=40,
                annotations=anns,
            ),
            info_model.ActionProfile("p", 8),
        )
    )
    selector, plain = build_p4info(model).action_profiles
    assert selector.sum_of_members.max_member_weight == 40
    assert list(selector.preamble.annotations) == []
    assert plain.WhichOneof("selector_size_semantics") is None


def test_value_set_controller_header_meter_and_new_type() -> None:
    from finsy.proto import p4i

    model = info_model.Model(
        value_sets=(
            info_model.ValueSet(
                "p.pvs",
                4,
                (
                    info_model.MatchField("f1", 8, "exact"),
                    info_model.MatchField("f2", 16, "ternary", annotations=ann("@match(ternary)")),
                ),
            ),
        ),
        controller_headers=(
            info_model.ControllerHeader(
                "packet_in_t",
                "packet_in",
                (
                    info_model.PacketMetadata("port", 9),
                    info_model.PacketMetadata("pad", 7, hidden=True),
                ),
                annotations=ann('@controller_header("packet_in")'),
            ),
        ),
        meters=(info_model.Meter("c.m", "bytes", 32),),
        type_info=info_model.TypeInfo(
            new_types=(
                (
                    "port_t",
                    info_model.NewTypeInfo(None, info_model.Translation("p4.org/port", None)),
                ),
            ),
            serializable_enums=(("E", info_model.SerEnumInfo(8, (("A", 1), ("B", 255)))),),
            errors=("NoError", "PacketTooShort"),
        ),
    )
    info = build_p4info(model)
    vs = info.value_sets[0]
    assert [(f.id, f.name, p4i.MatchField.MatchType.Name(f.match_type)) for f in vs.match] == [
        (1, "f1", "EXACT"),
        (2, "f2", "TERNARY"),
    ]
    assert list(vs.match[1].annotations) == []
    header = info.controller_packet_metadata[0]
    assert header.preamble.id == pid(Prefix.CONTROLLER_HEADER, "packet_in_t")
    assert (header.preamble.name, header.preamble.alias) == ("packet_in", "packet_in")
    assert [f.name for f in header.metadata] == ["port"]
    assert p4i.MeterSpec.Unit.Name(info.meters[0].spec.unit) == "BYTES"
    assert info.meters[0].spec.type == 0
    assert info.type_info.new_types["port_t"].translated_type.HasField("sdn_string")
    assert [mm.value for mm in info.type_info.serializable_enums["E"].members] == [b"\x01", b"\xff"]
    assert list(info.type_info.error.members) == ["NoError", "PacketTooShort"]


def test_structured_annotations_and_other_match_type() -> None:
    structured = info_model.Annotations(
        structured=(
            info_model.StructuredAnnotation("tags", expressions=("x", 3, True)),
            info_model.StructuredAnnotation("kv", kv_pairs=(("k", "v"),)),
        )
    )
    model = info_model.Model(
        tables=(
            info_model.Table(
                "t", (info_model.MatchField("f", 8, "custom_kind"),), annotations=structured
            ),
        )
    )
    table = build_p4info(model).tables[0]
    assert table.match_fields[0].other_match_type == "custom_kind"
    sa = table.preamble.structured_annotations
    assert sa[0].name == "tags"
    assert [e.WhichOneof("value") for e in sa[0].expression_list.expressions] == [
        "string_value",
        "int64_value",
        "bool_value",
    ]
    assert sa[1].kv_pair_list.kv_pairs[0].value.string_value == "v"


def test_conflicting_ids_are_a_source_error() -> None:
    model = info_model.Model(
        actions=(
            info_model.Action("a", explicit_id=1),
            info_model.Action("b", explicit_id=0x01000001),
        ),
    )
    with pytest.raises(P4SourceError):
        build_p4info(model)


def test_json_and_binary_round_trip() -> None:
    from finsy.proto import p4i

    info = build_p4info(_tiny())
    parsed = json.loads(to_json(info))
    assert parsed["tables"][0]["preamble"]["name"] == "ingress.acl"
    assert parsed["pkgInfo"]["arch"] == "v1model"
    again = p4i.P4Info()
    again.ParseFromString(to_binary(info))
    assert again == info
