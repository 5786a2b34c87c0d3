"""Decision latency of the controller's path-selection engine, offline.

``kvfabric bench scheduler [--spines N] [--leaves N] [--inflight N] [--decisions N]``;
the last line printed is one JSON object with ``p50_us``, ``p99_us``, ``spines``,
``inflight`` and more (see :mod:`controller.bench_scheduler`).
"""

from __future__ import annotations

import sys

from controller.bench_scheduler import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
