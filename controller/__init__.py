"""controller: the kvfabric controller service.

Data flows through it in this order: ``config`` (the fabric file) -> ``topology``
(a networkx graph and candidate spine paths) -> ``engine`` (the pure decision core:
counters to utilisation in ``engine.telemetry_math``, path selection, safety and
observability, returning the updates to apply) -> ``service``, the I/O shell that
applies them to the switches over P4Runtime and serves the transfer API. ``review``
reads the transfer logs back into the weekly report, and ``errors`` is every error the
controller reports to a user, in one tree. ``collector`` is how the long-running
process sets Python's garbage collector once its fabric is loaded.
"""
