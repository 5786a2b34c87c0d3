"""The pcap writer against scapy's reader."""

from __future__ import annotations

from pathlib import Path

from scapy.layers.l2 import Ether
from scapy.utils import rdpcap

from softswitch.switch.pcap import PcapWriter, read_pcap


def test_scapy_reads_what_we_write(tmp_path: Path) -> None:
    frames = [bytes(Ether(dst="00:00:00:00:00:01") / (b"x" * n)) for n in (0, 10, 1500)]
    path = tmp_path / "veth0_in.pcap"
    with PcapWriter(path) as writer:
        for i, frame in enumerate(frames):
            writer.write(frame, timestamp=1000.5 + i)
    packets = rdpcap(str(path))
    assert [bytes(p) for p in packets] == frames
    assert [float(p.time) for p in packets] == [1000.5, 1001.5, 1002.5]
    assert [f for _, f in read_pcap(path)] == frames


def test_records_are_visible_before_close(tmp_path: Path) -> None:
    writer = PcapWriter(tmp_path / "p.pcap", snaplen=4)
    writer.write(b"abcdefgh", timestamp=1.0)
    assert read_pcap(tmp_path / "p.pcap") == [(1.0, b"abcd")]
    writer.close()
