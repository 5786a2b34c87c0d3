"""Expect matching as p4c's BMv2 driver does it, and the per-port diff."""

from __future__ import annotations

from softswitch.stf.expect import compare_outputs, compare_packet, format_reports
from softswitch.stf.syntax import Expect


def test_prefix_match_by_default() -> None:
    assert compare_packet("0A0B", False, bytes([0x0A, 0x0B, 0x0C])) is None


def test_dollar_requires_the_exact_length() -> None:
    mismatch = compare_packet("0A0B", True, bytes([0x0A, 0x0B, 0x0C]))
    assert mismatch is not None
    assert mismatch.position == 4
    assert "too long" in mismatch.reason
    assert compare_packet("0A0B", True, bytes([0x0A, 0x0B])) is None


def test_star_matches_any_nibble() -> None:
    assert compare_packet("*A*B", False, bytes([0xFA, 0x0B])) is None
    mismatch = compare_packet("*A*C", False, bytes([0xFA, 0x0B]))
    assert mismatch is not None and mismatch.position == 3


def test_a_short_packet_does_not_match() -> None:
    mismatch = compare_packet("0A0B0C", False, bytes([0x0A, 0x0B]))
    assert mismatch is not None
    assert mismatch.position == 4
    assert "too short" in mismatch.reason


def test_packets_compare_in_order_per_port_and_freely_across_ports() -> None:
    expects = [
        Expect(1, 1, "01"),
        Expect(2, 2, "02"),
        Expect(3, 1, "03"),
    ]
    outputs = {2: [b"\x02"], 1: [b"\x01", b"\x03"]}
    reports = compare_outputs(expects, outputs, interfaces={0})
    assert [r.port for r in reports] == [0, 1, 2]
    assert all(r.ok for r in reports)


def test_order_within_a_port_matters() -> None:
    expects = [Expect(1, 1, "01"), Expect(2, 1, "03")]
    reports = compare_outputs(expects, {1: [b"\x03", b"\x01"]}, interfaces=())
    assert not reports[0].ok
    assert reports[0].mismatches[0] is not None


def test_the_count_per_named_port_must_match() -> None:
    too_many = compare_outputs([Expect(1, 1, "01")], {1: [b"\x01", b"\x01"]}, ())
    assert not too_many[0].ok and not too_many[0].count_ok
    too_few = compare_outputs([Expect(1, 1, "01"), Expect(2, 1, "01")], {1: [b"\x01"]}, ())
    assert not too_few[0].ok


def test_a_packet_on_an_input_port_without_expects_fails() -> None:
    # Port 0 is named by a 'packet' line, so it is an interface with 0 expected packets.
    reports = compare_outputs([], {0: [b"\x00"]}, interfaces={0})
    assert not reports[0].ok


def test_packets_on_ports_the_test_never_names_are_ignored() -> None:
    reports = compare_outputs([Expect(1, 1, "01")], {1: [b"\x01"], 9: [b"\x09"]}, {0})
    by_port = {r.port: r for r in reports}
    assert by_port[9].ok and not by_port[9].captured
    assert all(r.ok for r in reports)


def test_expect_without_data_allows_any_number() -> None:
    for count in (0, 1, 5):
        reports = compare_outputs([Expect(1, 3, None)], {3: [b"\x00"] * count}, ())
        assert reports[0].ok


def test_diff_shows_both_packets_and_points_at_the_first_difference() -> None:
    expects = [Expect(7, 1, "000102030405060708")]
    reports = compare_outputs(expects, {1: [bytes(range(4)) + b"\xff" + bytes(range(5, 9))]}, ())
    text = format_reports(reports, "t.stf")
    lines = text.splitlines()
    assert lines[0] == "port 1: 1 packet expected, 1 received: MISMATCH"
    assert lines[1] == "  packet 1 (expect at t.stf:7): differs at hex digit 8 (byte 4)"
    assert lines[2] == "    expected: 00010203 04050607 08"
    assert lines[3] == "    received: 00010203 FF050607 08"
    # The caret sits under the first differing digit (after one group separator).
    assert lines[4].index("^") == lines[3].index("FF")


def test_diff_lists_missing_and_unexpected_packets() -> None:
    missing = compare_outputs([Expect(3, 2, "AA"), Expect(4, 2, "BB")], {2: [b"\xaa"]}, ())
    text = format_reports(missing, "t.stf")
    assert "port 2: 2 packets expected, 1 received: MISMATCH" in text
    assert "packet 2 (expect at t.stf:4): not received" in text
    extra = compare_outputs([], {0: [b"\xab\xcd"]}, {0})
    text = format_reports(extra, "t.stf")
    assert "packet 1: not expected" in text
    assert "received: ABCD" in text


def test_only_failing_ports_are_shown_unless_asked() -> None:
    reports = compare_outputs([Expect(1, 1, "01"), Expect(2, 2, "02")], {1: [b"\x01"]}, ())
    text = format_reports(reports, "t.stf")
    assert "port 1" not in text and "port 2" in text
    assert "port 1: 1 packet expected, 1 received: ok" in format_reports(
        reports, "t.stf", all_ports=True
    )
