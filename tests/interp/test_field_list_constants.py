"""``@field_list`` indices written as named constants and constant expressions.

A metadata field annotated ``@field_list(FL)``, with ``FL`` a named constant,
belongs to field list FL: clone, resubmit and recirculate keep it as they keep a
field annotated with the literal.  (A PacketIn built by an I2E clone to the CPU
port carries such fields.)
"""

from __future__ import annotations

from pathlib import Path

from softswitch.frontend import load_program
from softswitch.interp.pipeline import Pipeline
from softswitch.runtime.pre import CloneSession, Replica

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
const bit<8> FL_CLONE = 1;
const int FL_BASE = 2;
const bit<8> FL_LOOP = (bit<8>)FL_BASE + 1;
header h_t { bit<8> a; bit<8> kept; bit<8> lost; bit<8> passes; }
struct headers { h_t h; }
struct meta {
    @field_list(FL_CLONE) bit<8> reason;
    @field_list(FL_CLONE, FL_LOOP) bit<8> count;
    bit<8> scratch;
}
parser P(packet_in pk, out headers hdr, inout meta m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout meta m) { apply { } }
control IG(inout headers hdr, inout meta m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.h.a == 1 && sm.instance_type == 0) {
            m.reason = 0x5A;
            m.count = 7;
            m.scratch = 9;
            clone_preserving_field_list(CloneType.I2E, 57, FL_CLONE);
        } else if (hdr.h.a == 2) {
            if (m.count < 3) {
                m.count = m.count + 1;
                m.scratch = 9;
                resubmit_preserving_field_list(FL_LOOP);
            }
        }
    }
}
control EG(inout headers hdr, inout meta m, inout standard_metadata_t sm) {
    apply {
        hdr.h.kept = m.reason;
        hdr.h.lost = m.scratch;
        hdr.h.passes = m.count;
        if (hdr.h.a == 3 && m.count < 2) {
            m.count = m.count + 1;
            recirculate_preserving_field_list(FL_LOOP);
        }
    }
}
control CK(inout headers hdr, inout meta m) { apply { } }
control DP(packet_out pk, in headers hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), VC(), IG(), EG(), CK(), DP()) main;
"""


def load(tmp_path: Path) -> Pipeline:
    path = tmp_path / "field_lists.p4"
    path.write_text(PROGRAM)
    return Pipeline.load(load_program(str(path)), cpu_port=255)


def test_i2e_clone_keeps_the_fields_of_a_named_field_list(tmp_path: Path) -> None:
    pl = load(tmp_path)
    pl.state.pre.insert_clone_session(CloneSession(57, (Replica(255, 0),)))
    out = pl.process(0, bytes([1, 0, 0, 0]))
    # the clone (to the CPU port) keeps reason and count, not scratch; the original
    # packet's egress metadata is its own (reason 0x5A, scratch 9, count 7)
    assert sorted(out) == [(1, bytes([1, 0x5A, 9, 7])), (255, bytes([1, 0x5A, 0, 7]))]


def test_resubmit_and_recirculate_keep_a_constant_expression_field_list(
    tmp_path: Path,
) -> None:
    pl = load(tmp_path)
    # count survives each of three resubmits (FL_LOOP = 3); reason and scratch do not
    assert pl.process(0, bytes([2, 0, 0, 0])) == [(1, bytes([2, 0, 0, 3]))]
    # count survives each of two recirculations
    assert pl.process(0, bytes([3, 0, 0, 0])) == [(1, bytes([3, 0, 0, 2]))]
