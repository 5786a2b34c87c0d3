"""Micro-benchmark of table lookups (not a test): prints lookups per second.

    .venv/bin/python -m benchmarks.runtime_lookup

Three tables: an exact table (2 keys, 10k entries), an IPv4 LPM table with
10k prefixes of lengths 8 to 32, and a ternary ACL (5 keys, 1k entries with
a dozen distinct masks).  Keys are drawn so that about half the lookups hit (in the LPM table the
many /8 prefixes cover nearly every address, so nearly all lookups hit).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from softswitch.runtime.actions import ActionCall, ActionSpec
from softswitch.runtime.tables import (
    Exact,
    KeySpec,
    Lpm,
    Table,
    TableEntry,
    TableSpec,
    Ternary,
)

ACTIONS = (ActionSpec("fwd", (("port", 9),)), ActionSpec("NoAction"))


def table(keys: tuple[KeySpec, ...], size: int) -> Table:
    return Table(TableSpec("t", keys, ACTIONS, size=size))


def rate(lookup: Callable[[tuple[int, ...]], object], keys: list[tuple[int, ...]]) -> float:
    start = time.perf_counter()
    rounds = 0
    while time.perf_counter() - start < 1.0:
        for key in keys:
            lookup(key)
        rounds += 1
    return rounds * len(keys) / (time.perf_counter() - start)


def exact(rng: random.Random) -> tuple[Table, list[tuple[int, ...]]]:
    t = table((KeySpec("dmac", 48, "exact"), KeySpec("vlan", 12, "exact")), 10_000)
    macs = [rng.getrandbits(48) for _ in range(10_000)]
    for i, mac in enumerate(macs):
        t.insert(TableEntry((Exact(mac), Exact(i % 4096)), action=ActionCall("fwd", (i % 512,))))
    keys: list[tuple[int, ...]] = [
        (macs[i], i % 4096) if i % 2 else (rng.getrandbits(48), 1) for i in range(10_000)
    ]
    return t, keys


def lpm(rng: random.Random) -> tuple[Table, list[tuple[int, ...]]]:
    t = table((KeySpec("dst", 32, "lpm"),), 20_000)
    seen: set[tuple[int, int]] = set()
    while len(seen) < 10_000:
        plen = rng.choice([8, 16, 20, 24, 24, 24, 28, 32])
        value = rng.getrandbits(32) & ~((1 << (32 - plen)) - 1) & 0xFFFFFFFF
        if (value, plen) in seen:
            continue
        seen.add((value, plen))
        t.insert(TableEntry((Lpm(value, plen),), action=ActionCall("fwd", (plen,))))
    prefixes = list(seen)
    keys: list[tuple[int, ...]] = []
    for i in range(10_000):
        value, plen = prefixes[i]
        keys.append((value | rng.getrandbits(32 - plen),) if i % 2 else (rng.getrandbits(32),))
    return t, keys


def ternary(rng: random.Random) -> tuple[Table, list[tuple[int, ...]]]:
    keys_spec = (
        KeySpec("src", 32, "ternary"),
        KeySpec("dst", 32, "ternary"),
        KeySpec("proto", 8, "ternary"),
        KeySpec("sport", 16, "ternary"),
        KeySpec("dport", 16, "ternary"),
    )
    t = table(keys_spec, 2_000)
    src_masks = [0, 0xFF000000, 0xFFFF0000, 0xFFFFFF00]
    dst_masks = [0, 0xFFFF0000, 0xFFFFFFFF]
    entries = []
    for i in range(1_000):
        sm, dm = rng.choice(src_masks), rng.choice(dst_masks)
        src, dst = rng.getrandbits(32) & sm, rng.getrandbits(32) & dm
        proto = rng.choice([6, 17])
        dport = rng.choice([0, 22, 80, 443])
        entries.append((src, dst, proto, dport))
        t.insert(
            TableEntry(
                (
                    Ternary(src, sm),
                    Ternary(dst, dm),
                    Ternary(proto, 0xFF),
                    None,
                    Ternary(dport, 0xFFFF if dport else 0),
                ),
                priority=i + 1,
                action=ActionCall("fwd", (i % 512,)),
            )
        )
    keys: list[tuple[int, ...]] = []
    for i in range(10_000):
        src, dst, proto, dport = entries[i % 1_000]
        if i % 2:
            keys.append((src | 1, dst, proto, 1234, dport or 8080))
        else:
            keys.append((rng.getrandbits(32), rng.getrandbits(32), 1, 1, 1))
    return t, keys


def main() -> None:
    rng = random.Random(1)
    for name, build in (
        ("exact, 10k entries", exact),
        ("lpm, 10k prefixes", lpm),
        ("ternary, 1k entries", ternary),
    ):
        t, keys = build(rng)
        hits = sum(t.lookup(k).hit for k in keys)
        print(f"{name:24} {rate(t.lookup, keys):>12,.0f} lookups/s  ({hits / len(keys):.0%} hit)")


if __name__ == "__main__":
    main()
