"""Counters, meters and registers, with BMv2's data-plane semantics.

Each extern has two faces.  The data-plane methods (``count``, ``execute``,
``Register.read``/``write``) are what compiled closures call per packet: they
never raise, and an index past the end does what BMv2's simple_switch does
(nothing is counted or written; a register read or meter execution leaves
its destination unchanged, which is signalled by returning ``None``).  The
control-plane methods (``read``/``write``/``reset`` of counters,
``set_config``/``get_config`` of meters, ``get``/``set`` of registers) check
their arguments and raise :class:`RuntimeConfigError` with the P4Runtime
status (an index past the end is ``OUT_OF_RANGE``).

Counters always count both packets and bytes, as BMv2 does; ``unit`` is kept
for the control plane to report.  Direct counters and meters keep their cells
on the table entry itself (``entry.counter`` and ``entry.meter``), so that a
hit costs one attribute access.

Meters are BMv2's two-rate three-colour markers (RFC 2698, colour-blind).
Rates are integers in units (packets or bytes) per second and bursts
integers in units, as P4Runtime writes them (``int64``): a configuration is
stored as written and read back exactly, whatever its size.  Time is an
integer count of microseconds since the switch started, passed by the
caller so that tests are deterministic.  An unconfigured meter marks every
packet GREEN.  The token arithmetic is BMv2's, done exactly on integers
where BMv2 uses a double rate per microsecond: for each rate, from the peak
one to the committed one, the bucket is refilled with
``now_us * rate // 10**6 - tokens_last`` tokens (capped at the burst), and
the first bucket holding fewer tokens than the packet needs gives the
colour (RED for peak, YELLOW for committed) and stops the walk.

A configuration is refused (``INVALID_ARGUMENT``) where PI's P4Runtime
server refuses it for BMv2: a negative rate or burst, or a burst above
2**32 - 1 (BMv2 keeps bursts in 32 bits); and a committed rate above the
peak one, which a two-rate marker cannot honour.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol

from softswitch.errors import RuntimeConfigError


class CounterUnit(enum.Enum):
    PACKETS = "packets"
    BYTES = "bytes"
    PACKETS_AND_BYTES = "packets_and_bytes"


class MeterType(enum.Enum):
    PACKETS = "packets"
    BYTES = "bytes"


class Color(enum.IntEnum):
    """The colours a meter gives, as v1model and BMv2 number them."""

    GREEN = 0
    YELLOW = 1
    RED = 2


@dataclass(slots=True)
class CounterData:
    """One counter cell; mutable, it is the live cell of a direct counter."""

    packets: int = 0
    bytes: int = 0


MAX_BURST = (1 << 32) - 1  # BMv2 (through PI) keeps burst sizes in 32 bits
MICROS = 1_000_000


@dataclass(frozen=True, slots=True)
class MeterConfig:
    """trTCM configuration: rates in units per second, bursts in units, all integers."""

    cir: int
    cburst: int
    pir: int
    pburst: int

    def rates_per_second(self) -> tuple[int, int, int, int]:
        """``(cir, cburst, pir, pburst)`` exactly as written."""
        return (self.cir, self.cburst, self.pir, self.pburst)


def check_meter_config(config: MeterConfig) -> None:
    """Reject what PI and BMv2 reject (see the module docstring)."""
    fields = config.rates_per_second()
    if any(isinstance(v, bool) or not isinstance(v, int) for v in fields):
        raise RuntimeConfigError(
            "INVALID_ARGUMENT", f"meter config values must be integers: {config}"
        )
    if min(fields) < 0:
        raise RuntimeConfigError("INVALID_ARGUMENT", f"negative value in meter config {config}")
    if max(config.cburst, config.pburst) > MAX_BURST:
        raise RuntimeConfigError(
            "INVALID_ARGUMENT",
            f"meter burst {max(config.cburst, config.pburst)} is above {MAX_BURST} (32 bits)",
        )
    if config.cir > config.pir:
        raise RuntimeConfigError(
            "INVALID_ARGUMENT", f"meter CIR {config.cir} is above its PIR {config.pir}"
        )


class MeterCell:
    """The state of one trTCM: its configuration and its two token buckets."""

    __slots__ = ("_buckets", "config")

    def __init__(self, config: MeterConfig | None = None) -> None:
        self.config: MeterConfig | None = None
        # Each bucket: [rate per second, burst, tokens, tokens_last, colour], peak first.
        self._buckets: list[list[int]] | None = None
        self.configure(config)

    def configure(self, config: MeterConfig | None) -> None:
        """Set (or with None, remove) the configuration; buckets start full."""
        self.config = config
        if config is None:
            self._buckets = None
            return
        self._buckets = [
            [config.pir, config.pburst, config.pburst, 0, Color.RED],
            [config.cir, config.cburst, config.cburst, 0, Color.YELLOW],
        ]

    def execute(self, amount: int, now_us: int) -> int:
        """Mark a packet of ``amount`` units at time ``now_us``; return its colour."""
        buckets = self._buckets
        if buckets is None:
            return Color.GREEN
        for bucket in buckets:
            # max(): a clock that goes backwards adds no tokens
            since_init = max(now_us * bucket[0] // MICROS, bucket[3])
            tokens = min(bucket[2] + since_init - bucket[3], bucket[1])
            bucket[3] = since_init
            if tokens < amount:
                bucket[2] = tokens
                return int(bucket[4])
            bucket[2] = tokens - amount
        return Color.GREEN


class HasCells(Protocol):
    """What a direct counter or meter needs of a table entry."""

    counter: CounterData | None
    meter_config: MeterConfig | None
    meter: MeterCell | None


def _check_index(kind: str, name: str, index: int, size: int) -> None:
    if index < 0:
        raise RuntimeConfigError("INVALID_ARGUMENT", f"negative index {index} into {kind} '{name}'")
    if index >= size:
        raise RuntimeConfigError(
            "OUT_OF_RANGE", f"index {index} is past the end of {kind} '{name}' (size {size})"
        )


COUNTER_MASK = (1 << 64) - 1  # BMv2's counter cells are unsigned 64-bit and wrap


class Counter:
    """An indexed counter array."""

    __slots__ = ("_bytes", "_packets", "name", "size", "unit")

    def __init__(self, name: str, size: int, unit: CounterUnit) -> None:
        self.name = name
        self.size = size
        self.unit = unit
        self._packets = [0] * size
        self._bytes = [0] * size

    def count(self, index: int, nbytes: int) -> None:
        """Data plane: count one packet of ``nbytes``; an index past the end counts nothing."""
        if index < self.size:
            self._packets[index] = (self._packets[index] + 1) & COUNTER_MASK
            self._bytes[index] = (self._bytes[index] + nbytes) & COUNTER_MASK

    def read(self, index: int) -> CounterData:
        """A copy of cell ``index``."""
        _check_index("counter", self.name, index, self.size)
        return CounterData(self._packets[index], self._bytes[index])

    def read_all(self) -> list[CounterData]:
        return [CounterData(p, b) for p, b in zip(self._packets, self._bytes, strict=True)]

    def write(self, index: int | None, data: CounterData) -> None:
        """Set cell ``index``, or every cell when ``index`` is None."""
        if index is None:
            self._packets = [data.packets] * self.size
            self._bytes = [data.bytes] * self.size
            return
        _check_index("counter", self.name, index, self.size)
        self._packets[index] = data.packets
        self._bytes[index] = data.bytes

    def reset(self, index: int | None = None) -> None:
        """Zero cell ``index``, or every cell."""
        self.write(index, CounterData())


class DirectCounter:
    """A counter with one cell per entry of ``table``, kept on the entry."""

    __slots__ = ("name", "table", "unit")

    def __init__(self, name: str, table: str, unit: CounterUnit) -> None:
        self.name = name
        self.table = table
        self.unit = unit

    @staticmethod
    def count(entry: HasCells, nbytes: int) -> None:
        """Data plane: count one packet of ``nbytes`` on the hit entry."""
        cell = entry.counter
        if cell is not None:
            cell.packets = (cell.packets + 1) & COUNTER_MASK
            cell.bytes = (cell.bytes + nbytes) & COUNTER_MASK

    @staticmethod
    def read(entry: HasCells) -> CounterData:
        cell = entry.counter or CounterData()
        return CounterData(cell.packets, cell.bytes)

    @staticmethod
    def write(entry: HasCells, data: CounterData) -> None:
        entry.counter = CounterData(data.packets, data.bytes)


class Meter:
    """An indexed array of trTCM meters."""

    __slots__ = ("_cells", "name", "size", "type")

    def __init__(self, name: str, size: int, type: MeterType) -> None:
        self.name = name
        self.size = size
        self.type = type
        self._cells = [MeterCell() for _ in range(size)]

    def execute(self, index: int, nbytes: int, now_us: int) -> int | None:
        """Data plane: the colour of this packet, or None for an index past the end."""
        if index >= self.size:
            return None
        amount = 1 if self.type is MeterType.PACKETS else nbytes
        return self._cells[index].execute(amount, now_us)

    def set_config(self, index: int | None, config: MeterConfig | None) -> None:
        """Configure cell ``index`` (every cell when None); None config means GREEN always."""
        if config is not None:
            check_meter_config(config)
        if index is None:
            for cell in self._cells:
                cell.configure(config)
            return
        _check_index("meter", self.name, index, self.size)
        self._cells[index].configure(config)

    def get_config(self, index: int) -> MeterConfig | None:
        _check_index("meter", self.name, index, self.size)
        return self._cells[index].config

    def reset(self) -> None:
        """Unconfigure every cell."""
        self.set_config(None, None)


class DirectMeter:
    """A meter with one cell per entry of ``table``, kept on the entry."""

    __slots__ = ("name", "table", "type")

    def __init__(self, name: str, table: str, type: MeterType) -> None:
        self.name = name
        self.table = table
        self.type = type

    def execute(self, entry: HasCells, nbytes: int, now_us: int) -> int:
        """Data plane: run the hit entry's meter on this packet and return its colour."""
        cell = entry.meter
        if cell is None:
            return Color.GREEN
        return cell.execute(1 if self.type is MeterType.PACKETS else nbytes, now_us)

    @staticmethod
    def set_config(entry: HasCells, config: MeterConfig | None) -> None:
        if config is not None:
            check_meter_config(config)
        entry.meter_config = config
        if entry.meter is None:
            entry.meter = MeterCell(config)
        else:
            entry.meter.configure(config)

    @staticmethod
    def get_config(entry: HasCells) -> MeterConfig | None:
        return entry.meter_config


class Register:
    """An array of ``width``-bit values, all zero at start."""

    __slots__ = ("_mask", "_values", "name", "size", "width")

    def __init__(self, name: str, size: int, width: int) -> None:
        self.name = name
        self.size = size
        self.width = width
        self._mask = (1 << width) - 1
        self._values = [0] * size

    def read(self, index: int) -> int | None:
        """Data plane: element ``index``, or None past the end (BMv2 leaves the destination)."""
        if index < self.size:
            return self._values[index]
        return None

    def write(self, index: int, value: int) -> None:
        """Data plane: store ``value`` truncated to the width; past the end nothing happens."""
        if index < self.size:
            self._values[index] = value & self._mask

    def get(self, index: int) -> int:
        """Control plane: element ``index``."""
        _check_index("register", self.name, index, self.size)
        return self._values[index]

    def get_all(self) -> list[int]:
        return list(self._values)

    def set(self, index: int | None, value: int) -> None:
        """Control plane: set element ``index`` (every element when None)."""
        if value < 0 or value > self._mask:
            raise RuntimeConfigError(
                "OUT_OF_RANGE",
                f"value {value} does not fit in register '{self.name}' ({self.width} bits)",
            )
        if index is None:
            self._values = [value] * self.size
            return
        _check_index("register", self.name, index, self.size)
        self._values[index] = value

    def reset(self) -> None:
        """Zero every element."""
        self._values = [0] * self.size
