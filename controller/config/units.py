"""Units of the fabric file: capacities in bit/s, durations, fractions.

Capacities are bits per second with decimal SI prefixes, as link rates are quoted:
``20Mbps``, ``400Gbps``, ``2.5 Gb/s``, ``100G``, ``10Mbit`` or a bare integer of
bit/s. A capital ``B`` means bytes and is refused rather than guessed.
Durations need a unit: ``500us``, ``100ms``, ``2s``, ``5m``, ``1h``, ``7d``.
Fractions are ``10%`` or ``0.1``.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal

_PREFIX = {"": 1, "k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
_CAPACITY = re.compile(
    r"^\s*(?P<num>\d+(?:\.\d+)?)\s*(?P<prefix>[kKMGT]?)\s*(?P<unit>bps|bit/s|b/s|bit|bits|b)?\s*$"
)
_BYTES_UNIT = re.compile(r"^\s*\d+(?:\.\d+)?\s*[kKMGT]?(?:B|Bps|B/s|byte|bytes)\s*$")

_DURATION_UNIT = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"^\s*(?P<num>\d+(?:\.\d+)?)\s*(?P<unit>us|ms|s|m|h|d)\s*$")
_PERCENT = re.compile(r"^\s*(?P<num>-?\d+(?:\.\d+)?)\s*%\s*$")


class UnitError(ValueError):
    """A value that does not parse in its unit; the message says what was expected."""


def parse_capacity(text: str) -> int:
    """Bit/s of ``'20Mbps'``, ``'400Gbps'``, ``'2.5Gb/s'``, ``'100G'`` or ``'1000'``."""
    m = _CAPACITY.match(text)
    if m is None:
        if _BYTES_UNIT.match(text):
            raise UnitError("capacities are in bits per second ('Mbps'), not bytes ('MB')")
        raise UnitError("expected a capacity such as '20Mbps' or '400Gbps'")
    bps = Decimal(m.group("num")) * _PREFIX[m.group("prefix")]
    if bps != bps.to_integral_value():
        raise UnitError("a capacity must be a whole number of bit/s")
    return int(bps)


def parse_duration(text: str) -> float:
    """Seconds of ``'100ms'``, ``'2s'``, ``'5m'``, ``'7d'``; the unit is required."""
    m = _DURATION.match(text)
    if m is None:
        raise UnitError("expected a duration such as '100ms' or '2s'")
    return float(m.group("num")) * _DURATION_UNIT[m.group("unit")]


def parse_fraction(text: str) -> float:
    """0.1 for ``'10%'``; a plain number is taken as the fraction itself."""
    m = _PERCENT.match(text)
    if m is not None:
        return float(m.group("num")) / 100.0
    try:
        value = float(text)
    except ValueError:
        raise UnitError("expected a percentage such as '10%' or a fraction such as 0.1") from None
    if math.isnan(value) or math.isinf(value):
        raise UnitError("expected a finite fraction")
    return value


def format_capacity(bps: float) -> str:
    """``'400Gbps'``, ``'20Mbps'``, ``'2.5Gbps'``: the largest prefix that keeps it >= 1."""
    for prefix, scale in (("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3)):
        if bps >= scale:
            return f"{_plain(Decimal(int(bps)) / scale)}{prefix}bps"
    return f"{_plain(Decimal(int(bps)))}bps"


def format_duration(seconds: float) -> str:
    """``'100ms'``, ``'2s'``, ``'7d'``: the unit that reads naturally."""
    for unit, scale in (("d", 86400.0), ("h", 3600.0), ("m", 60.0), ("s", 1.0), ("ms", 1e-3)):
        if seconds >= scale and (seconds / scale) == round(seconds / scale, 3):
            return f"{_plain(Decimal(repr(seconds / scale)))}{unit}"
    return f"{_plain(Decimal(repr(seconds * 1e6)))}us"


def _plain(value: Decimal) -> str:
    """A decimal without exponent or trailing zeros: ``1.5``, ``400``, ``0.25``."""
    text = f"{value:f}"
    return text.rstrip("0").rstrip(".") if "." in text else text
