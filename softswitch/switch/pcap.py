"""A minimal libpcap file writer (``--pcap``): one file per interface and direction.

The classic pcap format: a 24-byte global header (magic ``a1b2c3d4``, version
2.4, microsecond timestamps, link type Ethernet) and a 16-byte record header
per packet.  Each record is flushed so that a test or ``tcpdump -r`` sees it at
once.
"""

from __future__ import annotations

import struct
import time
from pathlib import Path
from typing import BinaryIO

from softswitch.switch.closing import Closing

PCAP_MAGIC = 0xA1B2C3D4
LINKTYPE_ETHERNET = 1
SNAPLEN = 65535


class PcapWriter(Closing):
    """Appends Ethernet frames to a new pcap file."""

    def __init__(self, path: str | Path, snaplen: int = SNAPLEN) -> None:
        self.path = Path(path)
        self.snaplen = snaplen
        self._file: BinaryIO = open(self.path, "wb")  # noqa: SIM115 (closed by close())
        self._file.write(
            struct.pack("<IHHiIII", PCAP_MAGIC, 2, 4, 0, 0, snaplen, LINKTYPE_ETHERNET)
        )
        self._file.flush()

    def write(self, frame: bytes, timestamp: float | None = None) -> None:
        """Append one frame, truncated to the snap length."""
        ts = time.time() if timestamp is None else timestamp
        sec = int(ts)
        usec = int((ts - sec) * 1_000_000)
        data = frame[: self.snaplen]
        self._file.write(struct.pack("<IIII", sec, usec, len(data), len(frame)))
        self._file.write(data)
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def read_pcap(path: str | Path) -> list[tuple[float, bytes]]:
    """The (timestamp, frame) records of a pcap file written by :class:`PcapWriter`."""
    raw = Path(path).read_bytes()
    magic = struct.unpack_from("<I", raw)[0]
    if magic != PCAP_MAGIC:
        raise ValueError(f"{path}: not a little-endian microsecond pcap file")
    records = []
    offset = 24
    while offset + 16 <= len(raw):
        sec, usec, incl, _orig = struct.unpack_from("<IIII", raw, offset)
        offset += 16
        records.append((sec + usec / 1_000_000, raw[offset : offset + incl]))
        offset += incl
    return records
