"""``kvfabric simulate``: the KV-transfer experiment on a simulated fabric, at any scale.

The lab (:mod:`lab`) answers "does the mechanism work?" with real switches at 20 Mb/s;
the simulator answers "what will it do for my cluster?" at production rates and
thousands of GPUs. Both run the same experiment (:mod:`experiment`: the scenario,
arrivals, roles, ECMP hash, results and plots); nothing here imports the lab.
Modules, in the order data flows through them:

- ``maxmin``: max-min fair rates of flows over links (progressive filling, numpy);
- ``network``: the fabric's directed links and spine paths, from the controller's
  own topology;
- ``engine``: the interface an engine offers to the drivers of the modes;
- ``flow``: the flow-level engine (event-driven, max-min fair between events, or SRPT),
  whose per-event loops ``kernels`` compiles with numba; ``droptail`` is what links
  overloaded by constant-rate (UDP) flows carry of each;
- ``packet``: the packet-level engine, ns-3 (``packet_model.cpp`` is its C++ side);
- ``pods``: the optional third tier (pods joined by superspines);
- ``workload``: the scenario's transfers, background and events for one run;
- ``modes``: ecmp, ecmp-k, flowlet and isolated placement;
- ``kvaware``: kv-aware placement by the controller's decision engine itself, fed
  with telemetry from the simulated counters;
- ``srpt`` and ``reference``: the physical references every mode is compared with,
  ideal spraying (``spray``) and SRPT over pooled links with a per-transfer floor
  (``bound``);
- ``run``: one scenario's modes and repeats into the experiment's results document,
  with ``plots`` (each tier's utilisation over time); ``parallel`` runs them side by
  side in worker processes (``--jobs``);
- ``sweep``: a sweep file's grid as Dask tasks (``tasks``: one run as a worker runs it;
  ``cluster``: where they run);
- ``crossval``: the same scenarios through the flow and the packet engine, compared.
"""
