"""Counters, meters and registers (STUB: signatures final)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol


class CounterUnit(enum.Enum):
    PACKETS = "packets"
    BYTES = "bytes"
    PACKETS_AND_BYTES = "packets_and_bytes"


class MeterType(enum.Enum):
    PACKETS = "packets"
    BYTES = "bytes"


class Color(enum.IntEnum):
    GREEN = 0
    YELLOW = 1
    RED = 2


@dataclass(slots=True)
class CounterData:
    packets: int = 0
    bytes: int = 0


@dataclass(frozen=True, slots=True)
class MeterConfig:
    cir: float
    cburst: int
    pir: float
    pburst: int


class MeterCell:
    def __init__(self, config: MeterConfig | None = None) -> None:
        self.config = config

    def execute(self, amount: int, now_us: int) -> int:
        raise NotImplementedError


class HasCells(Protocol):
    counter: CounterData
    meter: MeterCell | None


class Counter:
    def __init__(self, name: str, size: int, unit: CounterUnit) -> None:
        self.name = name

    def count(self, index: int, nbytes: int) -> None:
        raise NotImplementedError

    def read(self, index: int) -> CounterData:
        raise NotImplementedError

    def write(self, index: int, data: CounterData) -> None:
        raise NotImplementedError

    def reset(self, index: int | None = None) -> None:
        raise NotImplementedError

    def read_all(self) -> list[CounterData]:
        raise NotImplementedError


class DirectCounter:
    def __init__(self, name: str, table: str, unit: CounterUnit) -> None:
        self.name = name

    def count(self, entry: HasCells, nbytes: int) -> None:
        raise NotImplementedError

    def read(self, entry: HasCells) -> CounterData:
        raise NotImplementedError

    def write(self, entry: HasCells, data: CounterData) -> None:
        raise NotImplementedError


class Meter:
    def __init__(self, name: str, size: int, type: MeterType) -> None:
        self.name = name

    def execute(self, index: int, nbytes: int, now_us: int) -> int:
        raise NotImplementedError

    def set_config(self, index: int, config: MeterConfig | None) -> None:
        raise NotImplementedError

    def get_config(self, index: int) -> MeterConfig | None:
        raise NotImplementedError


class DirectMeter:
    def __init__(self, name: str, table: str, type: MeterType) -> None:
        self.name = name

    def execute(self, entry: HasCells, nbytes: int, now_us: int) -> int:
        raise NotImplementedError

    def set_config(self, entry: HasCells, config: MeterConfig | None) -> None:
        raise NotImplementedError

    def get_config(self, entry: HasCells) -> MeterConfig | None:
        raise NotImplementedError


class Register:
    def __init__(self, name: str, size: int, width: int) -> None:
        self.name = name

    def read(self, index: int) -> int:
        raise NotImplementedError

    def write(self, index: int, value: int) -> None:
        raise NotImplementedError

    def get(self, index: int) -> int:
        raise NotImplementedError

    def set(self, index: int, value: int) -> None:
        raise NotImplementedError

    def reset(self) -> None:
        raise NotImplementedError
