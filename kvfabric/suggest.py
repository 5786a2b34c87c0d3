"""Guessing the name a user meant: one rule and one wording for every error message.

Every component (the P4 front-end, the runtime's name lookups, the controller's config
readers, the lab's scenarios and presets) suggests the closest known name the same way,
so that a typo reads the same wherever it is made::

    no table named 'ipv4_lmp'; did you mean 'ipv4_lpm'?

The closeness rule is :func:`difflib.get_close_matches` with one cutoff, ``CUTOFF``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

CUTOFF = 0.6


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The choice closest to ``word``, or None when none is close enough."""
    close = difflib.get_close_matches(word, sorted(set(choices)), n=1, cutoff=CUTOFF)
    return close[0] if close else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest choice, or ``""`` when none is close."""
    best = closest(word, choices)
    return f"; did you mean {best!r}?" if best is not None else ""


def choice_list(text: str, known: Sequence[str], noun: str) -> tuple[str, ...]:
    """The comma-separated choices of ``text`` (``"ecmp, kv-aware"``); ValueError naming
    the first that is not ``known`` (``noun`` says what they are: ``"mode"``)."""
    chosen = tuple(c.strip() for c in text.split(",") if c.strip())
    for c in chosen:
        if c not in known:
            raise ValueError(
                f"unknown {noun} {c!r}{did_you_mean(c, known)} ({noun}s: {', '.join(known)})"
            )
    return chosen
