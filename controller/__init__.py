"""controller: the kvfabric controller service.

Data flows through it in this order: ``config`` (the fabric file) -> ``topology``
(a networkx graph and candidate spine paths) -> ``telemetry_math`` (counters to
utilisation) -> ``engine`` (the pure decision core: path selection, safety and
observability, returning the updates to apply) -> the I/O shell that applies them
to the switches over P4Runtime and serves the transfer API.
"""
