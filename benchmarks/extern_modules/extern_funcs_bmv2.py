"""The extern function of p4c's ``extern-funcs-bmv2`` test, for ``--load-modules``.

p4c's BMv2 test loads a C++ module into ``simple_switch`` that implements
``extern void extern_func(out bit<32> d, bit<32> s)`` as ``d <- s``
(p4c's testdata/extern_modules); this is the same function for this target
(see :mod:`softswitch.interp.extern_funcs` for the calling convention).
"""

from __future__ import annotations


def extern_func(d: int, s: int) -> int:
    """``d <- s``: the new value of the out parameter ``d``."""
    del d
    return s


EXTERN_FUNCTIONS = {"extern_func": extern_func}
