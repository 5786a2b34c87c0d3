"""The ledger's encoding, and the book that keeps every leaf's ledger between polls."""

from __future__ import annotations

import json

from controller.service.southbound import ledger
from controller.service.southbound.ledger import Book, Placed, Record
from controller.service.southbound.pins import PinMeta


def _record(n: int, spine: str = "spine1") -> Record:
    meta = PinMeta(f"c0ffee-{n}", f"kv-{n}", "h11", "h21", 1000 * n, 1.7e9 + n / 4, 1.7e9 + 60,
                   spine)  # fmt: skip
    return Record(meta, 40000 + n)


def test_a_ledger_is_compact_json_sorted_by_transfer_id() -> None:
    records = [_record(n) for n in (10, 2, 7)]
    data = ledger.encode(records)
    rows = sorted((r.row() for r in records), key=lambda row: str(row[0]))
    doc = {"v": 1, "kind": "ledger", "t": rows}
    assert data == json.dumps(doc, separators=(",", ":")).encode()
    assert ledger.decode(data) == sorted(records, key=lambda r: r.meta.id)
    assert ledger.encode(reversed(records)) == data
    assert ledger.encode([]) == b""


def test_the_book_builds_only_new_or_changed_records_and_gives_what_ledgers_gives() -> None:
    book = Book[int]()
    spines = {n: "spine1" for n in range(6)}
    built: list[int] = []

    def place(n: int) -> Placed | None:
        built.append(n)
        if n == 5:
            return None  # a transfer without a tag: in no ledger
        leaf = "leaf1" if n < 4 else "leaf2"
        return leaf, (2, spines[n]), _record(n, spines[n])

    def expected(keys: list[int]) -> dict[str, dict[ledger.RangeKey, bytes]]:
        placed = [p for n in keys if (p := place(n)) is not None]
        out: dict[str, dict[ledger.RangeKey, bytes]] = {}
        for leaf in sorted({p[0] for p in placed}):
            out[leaf] = ledger.ledgers([(key, r) for lf, key, r in placed if lf == leaf])
        return out

    got = book.sync(dict(spines), place)
    assert sorted(built) == [0, 1, 2, 3, 4, 5]
    built.clear()
    assert got == expected(list(range(6)))
    built.clear()

    assert book.sync(dict(spines), place) == got
    assert built == []  # nothing new, nothing changed: nothing built

    # transfer 1 ends, 3 moves to spine2 (its version changes), 4 (leaf2's only) ends
    del spines[1], spines[4]
    spines[3] = "spine2"
    got = book.sync(dict(spines), place)
    assert built == [3]
    built.clear()
    assert got == expected([0, 2, 3, 5])
    assert set(got) == {"leaf1"}  # leaf2 holds nothing any more
    assert [r.meta.id for r in ledger.decode(got["leaf1"][2, "spine2"]) or ()] == ["c0ffee-3"]


def test_the_book_builds_a_burst_a_slice_at_a_time_and_ends_with_the_same_ledgers() -> None:
    sliced, whole = Book[int](), Book[int]()
    keys = {n: "spine1" for n in range(10)}
    built: list[int] = []

    def place(n: int) -> Placed | None:
        built.append(n)
        return "leaf1", (2, "spine1"), _record(n)

    changes = sliced.changes(keys)
    assert [k for k, _ in changes] == list(range(10))
    assert built == []  # nothing is built until filed
    sliced.file(changes[:4], place)
    assert built == [0, 1, 2, 3]
    sliced.file(changes[4:], place)
    assert built == list(range(10))
    assert sliced.ledgers() == whole.sync(keys, place)
    assert sliced.changes(keys) == []

    # one that ends is dropped at the next call (its record stayed until then)
    del keys[3]
    assert sliced.changes(keys) == []
    assert sliced.ledgers() == whole.sync(keys, place)
    assert "c0ffee-3" not in sliced.ledgers()["leaf1"][2, "spine1"].decode()
