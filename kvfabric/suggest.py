"""Guessing the name a user meant: one rule and one wording for every error message.

Every component (the P4 front-end, the runtime's name lookups, the controller's config
readers, the lab's scenarios and presets) suggests the closest known name the same way,
so that a typo reads the same wherever it is made::

    no table named 'ipv4_lmp'; did you mean 'ipv4_lpm'?

The closeness rule is :func:`difflib.get_close_matches` with one cutoff, ``CUTOFF``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

CUTOFF = 0.6


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The choice closest to ``word``, or None when none is close enough."""
    close = difflib.get_close_matches(word, sorted(set(choices)), n=1, cutoff=CUTOFF)
    return close[0] if close else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest choice, or ``""`` when none is close."""
    best = closest(word, choices)
    return f"; did you mean {best!r}?" if best is not None else ""
