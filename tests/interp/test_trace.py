"""The per-packet trace of a traced pipeline, in simple_switch's words and order."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from softswitch.frontend import load_program
from softswitch.interp.pipeline import Pipeline
from softswitch.interp.trace import TRACE
from softswitch.runtime.pre import CloneSession, Replica
from softswitch.runtime.tables import ActionCall, Exact, TableEntry

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<8> kind; bit<8> port; }
header tag_t { bit<16> label; }
struct headers { eth_t eth; tag_t tag; }
struct meta { }
parser TagParser(packet_in pk, out headers hdr, inout meta m, inout standard_metadata_t sm) {
    state start {
        pk.extract(hdr.eth);
        transition select(hdr.eth.kind) {
            7: parse_tag;
            default: accept;
        }
    }
    state parse_tag { pk.extract(hdr.tag); transition accept; }
}
control VC(inout headers hdr, inout meta m) { apply { } }
control TagIngress(inout headers hdr, inout meta m, inout standard_metadata_t sm) {
    action send(bit<9> port) { sm.egress_spec = port; }
    action discard() { mark_to_drop(sm); }
    table by_label {
        key = { hdr.tag.label: exact; }
        actions = { send; discard; }
        default_action = discard();
    }
    apply {
        if (hdr.tag.isValid()) {
            by_label.apply();
            if (hdr.tag.label == 9) { clone(CloneType.I2E, 3); }
        } else {
            sm.egress_spec = (bit<9>)hdr.eth.port;
        }
    }
}
control EG(inout headers hdr, inout meta m, inout standard_metadata_t sm) { apply { } }
control CK(inout headers hdr, inout meta m) { apply { } }
control DP(packet_out pk, in headers hdr) { apply { pk.emit(hdr.eth); pk.emit(hdr.tag); } }
V1Switch(TagParser(), VC(), TagIngress(), EG(), CK(), DP()) main;
"""


def traced(tmp_path: Path, trace: bool = True) -> Pipeline:
    path = tmp_path / "tag.p4"
    path.write_text(PROGRAM)
    pl = Pipeline.load(load_program(str(path)), trace=trace)
    table = pl.state.table("TagIngress.by_label")
    table.insert(TableEntry((Exact(0x0102),), action=ActionCall("TagIngress.send", (2,))))
    table.insert(TableEntry((Exact(9),), action=ActionCall("TagIngress.send", (4,))))
    pl.state.pre.insert_clone_session(CloneSession(3, (Replica(5),)))
    return pl


def messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    out = [r.getMessage() for r in caplog.records if r.name == "softswitch.packets"]
    caplog.clear()
    return out


def test_a_hit_shows_parser_states_table_action_and_egress_port(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pl = traced(tmp_path)
    caplog.set_level(TRACE, logger="softswitch.packets")
    assert pl.process(1, bytes([7, 0, 1, 2, 0xAA])) == [(2, bytes([7, 0, 1, 2, 0xAA]))]
    assert messages(caplog) == [
        "[0.0] [cxt 0] Processing packet received on port 1",
        "[0.0] [cxt 0] Parser 'parser': start",
        "[0.0] [cxt 0] Parser 'parser' entering state 'start'",
        "[0.0] [cxt 0] Extracting header 'eth'",
        "[0.0] [cxt 0] Parser state 'start': key is 07",
        "[0.0] [cxt 0] Parser 'parser' entering state 'parse_tag'",
        "[0.0] [cxt 0] Extracting header 'tag'",
        "[0.0] [cxt 0] Bytes parsed: 4",
        "[0.0] [cxt 0] Parser 'parser': end",
        "[0.0] [cxt 0] Pipeline 'ingress': start",
        "[0.0] [cxt 0] Applying table 'TagIngress.by_label'",
        "[0.0] [cxt 0] Looking up key:\n* hdr.tag.label       : 0102\n",
        "[0.0] [cxt 0] Table 'TagIngress.by_label': hit with handle 0",
        "[0.0] [cxt 0] Action entry is TagIngress.send - 2,",
        "[0.0] [cxt 0] Action TagIngress.send",
        "[0.0] [cxt 0] Pipeline 'ingress': end",
        "[0.0] [cxt 0] Egress port is 2",
        "[0.0] [cxt 0] Pipeline 'egress': start",
        "[0.0] [cxt 0] Pipeline 'egress': end",
        "[0.0] [cxt 0] Deparser 'deparser': start",
        "[0.0] [cxt 0] Deparser 'deparser': end",
        "[0.0] [cxt 0] Transmitting packet of size 5 out of port 2",
    ]


def test_a_miss_runs_the_default_action_and_drops(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pl = traced(tmp_path)
    caplog.set_level(TRACE, logger="softswitch.packets")
    assert pl.process(1, bytes([7, 0, 0, 5])) == []
    got = messages(caplog)
    assert "[0.0] [cxt 0] Table 'TagIngress.by_label': miss" in got
    assert "[0.0] [cxt 0] Action entry is TagIngress.discard - " in got
    assert got[-2:] == [
        "[0.0] [cxt 0] Egress port is 511",
        "[0.0] [cxt 0] Dropping packet at the end of ingress",
    ]
    # no select case: the parser ends at the first state, no table is applied
    assert pl.process(3, bytes([1, 6])) == [(6, bytes([1, 6]))]
    got = messages(caplog)
    assert "[1.0] [cxt 0] Parser state 'start': key is 01" in got
    assert not any("Applying table" in m for m in got)


def test_copies_are_numbered_and_the_second_hit_has_its_handle(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pl = traced(tmp_path)
    caplog.set_level(logging.DEBUG, logger="softswitch.packets")
    out = pl.process(1, bytes([7, 0, 0, 9]))
    assert sorted(port for port, _ in out) == [4, 5]
    got = messages(caplog)
    assert "[0.0] [cxt 0] Table 'TagIngress.by_label': hit with handle 1" in got
    assert "[0.0] [cxt 0] Cloning packet at ingress" in got
    assert "[0.1] [cxt 0] Transmitting packet of size 4 out of port 5" in got
    assert "[0.0] [cxt 0] Transmitting packet of size 4 out of port 4" in got
    # at debug, BMv2's trace-level lines are left out
    assert not any(re.search(r"Applying table|Bytes parsed|Action TagIngress", m) for m in got)


def test_an_untraced_pipeline_has_no_trace_code(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pl = traced(tmp_path, trace=False)
    caplog.set_level(TRACE, logger="softswitch.packets")
    assert pl.process(1, bytes([7, 0, 1, 2])) == [(2, bytes([7, 0, 1, 2]))]
    assert messages(caplog) == []
    assert "pk.tr(" not in pl.source and "trace_table" not in pl.source
    assert "pk.tr(" in traced(tmp_path).source
