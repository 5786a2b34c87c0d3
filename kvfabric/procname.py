"""The process name (``/proc/PID/comm``) a shim asks for, so tools that find BMv2 by name find us.

``kvfabric bmv2-shims`` writes shims that set ``KVFABRIC_PROCESS_NAME`` to their
own name before ``exec``-ing Python.  Scripts written for BMv2 find and stop
its processes by name (p4lang tutorials' ``runptf.sh`` runs
``pkill --list-name simple_switch``; ``ps -C``, ``pgrep`` do the same), and a
Python process is named ``python3.11``.  :func:`apply_requested_name` renames
the process with ``prctl(PR_SET_NAME)`` (the kernel keeps 15 bytes, as it does
for ``simple_switch_grpc`` itself) and removes the variable, so that processes
started later do not inherit it.
"""

from __future__ import annotations

import ctypes
import os

ENV = "KVFABRIC_PROCESS_NAME"
_PR_SET_NAME = 15


def set_process_name(name: str) -> bool:
    """Rename this process; False where prctl is unavailable."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_NAME, name.encode()[:15], 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def apply_requested_name() -> None:
    """Take the name a shim asked for, if any."""
    name = os.environ.pop(ENV, None)
    if name:
        set_process_name(name)
