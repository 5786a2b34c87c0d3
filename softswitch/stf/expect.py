"""Comparing the packets a program sent with the ``expect`` lines of an STF file.

The rules are those of p4c's BMv2 driver (``bmv2stf.py``):

* Every port that an STF file names in a ``packet`` or ``expect`` line is an
  interface of the switch. On each interface the number of packets received
  must equal the number of ``expect PORT DATA`` lines for it, and the packets
  are compared in order, port by port; the order across ports is free.
* ``expect PORT`` without data allows any number of packets on that port.
* Packets sent to a port that the file never names are not captured (BMv2 has
  no interface there), so they are reported but do not fail the test.
* An expected packet is upper-case hex where ``*`` matches any digit. It
  matches when the received packet starts with it (a prefix match); when the
  line ended with ``$`` the received packet must also be no longer.

This module is pure: it takes expectations and outputs and returns reports.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from softswitch.stf.syntax import Expect


@dataclass(frozen=True, slots=True)
class Mismatch:
    """Why one received packet does not match its expect line."""

    position: int  # hex digit where the packets part
    reason: str


@dataclass(frozen=True, slots=True)
class PortReport:
    """What one port was expected to send, what it sent, and what is wrong."""

    port: int
    expected: tuple[Expect, ...]
    received: tuple[bytes, ...]
    any_count: bool
    captured: bool
    mismatches: tuple[Mismatch | None, ...]

    @property
    def count_ok(self) -> bool:
        return self.any_count or not self.captured or len(self.expected) == len(self.received)

    @property
    def ok(self) -> bool:
        if self.any_count or not self.captured:
            return True
        return self.count_ok and all(m is None for m in self.mismatches)


def hex_of(data: bytes) -> str:
    """Upper-case hex, two digits a byte, as the driver prints packets."""
    return data.hex().upper()


def compare_packet(pattern: str, exact_length: bool, data: bytes) -> Mismatch | None:
    """None when data matches the pattern of an expect line, else where and why not."""
    received = hex_of(data)
    for i, want in enumerate(pattern):
        if i >= len(received):
            return Mismatch(
                i, f"too short: {len(received)} hex digits, expected at least {len(pattern)}"
            )
        if want != "*" and want != received[i]:
            return Mismatch(i, f"differs at hex digit {i} (byte {i // 2})")
    if exact_length and len(received) > len(pattern):
        return Mismatch(
            len(pattern), f"too long: {len(received)} hex digits, expected exactly {len(pattern)}"
        )
    return None


def compare_outputs(
    expects: Iterable[Expect],
    outputs: Mapping[int, Sequence[bytes]],
    interfaces: Iterable[int],
) -> tuple[PortReport, ...]:
    """One report per port that is an interface or received packets, by port number."""
    expects = list(expects)
    captured = set(interfaces) | {e.port for e in expects}
    any_ports = {e.port for e in expects if e.pattern is None}
    reports: list[PortReport] = []
    for port in sorted(captured | {p for p, pkts in outputs.items() if pkts}):
        wanted = tuple(e for e in expects if e.port == port and e.pattern is not None)
        received = tuple(outputs.get(port, ()))
        mismatches = tuple(
            compare_packet(e.pattern or "", e.exact_length, data)
            for e, data in zip(wanted, received, strict=False)
        )
        reports.append(
            PortReport(port, wanted, received, port in any_ports, port in captured, mismatches)
        )
    return tuple(reports)


# ---------------------------------------------------------------- report


def _grouped(digits: str) -> str:
    return " ".join(digits[i : i + 8] for i in range(0, len(digits), 8))


def _caret(position: int) -> str:
    return " " * (position + position // 8) + "^"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def format_port(report: PortReport, stf_file: str) -> list[str]:
    """The readable lines that explain one port's result."""
    n_exp, n_rec = len(report.expected), len(report.received)
    if not report.captured:
        return [
            f"port {report.port}: {_plural(n_rec, 'packet')} sent to a port the test never "
            "names (ignored, as BMv2 has no interface there)"
        ]
    if report.any_count:
        return [f"port {report.port}: {_plural(n_rec, 'packet')} received (any number allowed)"]
    status = "ok" if report.ok else "MISMATCH"
    lines = [f"port {report.port}: {_plural(n_exp, 'packet')} expected, {n_rec} received: {status}"]
    for i in range(max(n_exp, n_rec)):
        lines.extend(_format_pair(report, i, stf_file))
    return lines


def _format_pair(report: PortReport, i: int, stf_file: str) -> list[str]:
    expect = report.expected[i] if i < len(report.expected) else None
    data = report.received[i] if i < len(report.received) else None
    where = f" (expect at {stf_file}:{expect.line})" if expect is not None else ""
    if expect is None:
        assert data is not None
        return [f"  packet {i + 1}: not expected", f"    received: {_grouped(hex_of(data))}"]
    pattern = (expect.pattern or "") + ("$" if expect.exact_length else "")
    if data is None:
        return [f"  packet {i + 1}{where}: not received", f"    expected: {_grouped(pattern)}"]
    mismatch = report.mismatches[i]
    if mismatch is None:
        return [f"  packet {i + 1}{where}: ok"]
    return [
        f"  packet {i + 1}{where}: {mismatch.reason}",
        f"    expected: {_grouped(pattern)}",
        f"    received: {_grouped(hex_of(data))}",
        f"              {_caret(mismatch.position)}",
    ]


def format_reports(reports: Iterable[PortReport], stf_file: str, *, all_ports: bool = False) -> str:
    """A per-port diff of expected against received packets.

    Only failing ports are shown unless ``all_ports``.
    """
    lines: list[str] = []
    for report in reports:
        if all_ports or not report.ok:
            lines.extend(format_port(report, stf_file))
    return "\n".join(lines)
