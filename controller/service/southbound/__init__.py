"""The controller's southbound side: everything between the service and the switches.

In SDN terms the southbound interface is the controller's side that faces the data
plane. Here it holds the P4Runtime channels, what the switches should hold and the
writes that make it so, the telemetry and link probes read back from them, and what
the controller keeps on the switches so that a successor can take over. Its modules
follow the data:

- ``switches``: one finsy P4Runtime channel per switch (arbitration, the pipeline
  cookie, TLS), with gRPC errors translated into :class:`SwitchError`;
  ``pipeline``: the P4 program those channels push;
- ``lifecycle``: every switch's channel followed through its life (connecting, backup,
  primary, provisioned, down), the provisioning of each that comes up as primary, and
  its state for this controller, from ``readiness`` (pure: the states, the overall
  role, and which requests to refuse);
- ``intent`` and ``reconcile`` (pure): what each switch should hold, and the writes
  that make it so; ``provision`` reads a switch back and writes only the difference;
- ``enforce``: the engine's updates applied (modes, ECMP groups, flow pins, alerts, log);
- ``telemetry``: counters and queue banks of every switch, polled concurrently, read by
  ``reads`` on a worker thread;
- ``prober``: link probes (PacketOut) and their PacketIns, for the topology audit;
- ``ports``: the ports' speeds and oper-status each switch reports over gNMI (one
  ON_CHANGE stream per switch), for the engine's capacities and carriers;
- ``pins``: the metadata that lets a restarted controller, or a backup taking over,
  adopt a pin, and the transfers' API ids; ``ledger``: the transfers in flight kept in
  the range entries' metadata, which ``ledger_keeper`` writes every poll interval and
  reads back; ``adopt``: the transfers found there that this controller did not decide;
- ``flow_pins``: flow pins' ``flow_pin`` entries, written, removed, and synced or
  adopted when a leaf (re)connects.
"""
