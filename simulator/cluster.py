"""Where a simulated sweep's tasks run: a Dask ``distributed`` cluster.

Without a scheduler address the sweep runs on a local in-process cluster (one worker
whose threads share this process: nothing to start, nothing left behind). With
``tcp://HOST:8786`` it connects to a running ``dask scheduler``, whose workers must
have kvfabric installed. Failing to reach the scheduler is a :class:`ClusterError`
(one line, no traceback), not a hang: the connection has a timeout.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager

from distributed import Client

from experiment.errors import ExperimentError

CONNECT_TIMEOUT_S = 15.0


class ClusterError(ExperimentError):
    """The Dask scheduler could not be reached, or a task was lost with its workers."""


@contextmanager
def cluster_client(scheduler: str | None, threads: int | None = None) -> Iterator[Client]:
    """A client of ``scheduler``, or of a local in-process cluster when it is None."""
    # distributed logs every worker's start and stop at INFO: a sweep's user wants
    # the progress line, not the cluster's chatter
    logging.getLogger("distributed").setLevel(logging.WARNING)
    try:
        if scheduler is None:
            client = Client(
                processes=False,
                n_workers=1,
                threads_per_worker=threads or os.cpu_count() or 1,
                dashboard_address=None,
            )
        else:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT_S)
    except (OSError, TimeoutError, ValueError) as exc:
        where = scheduler or "a local in-process cluster"
        raise ClusterError(f"cannot reach the Dask scheduler at {where}: {exc}") from None
    try:
        yield client
    finally:
        client.close()
