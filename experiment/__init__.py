"""experiment: the definition of a KV-transfer experiment, which both engines run.

kvfabric answers one question two ways: the lab (:mod:`lab`) emulates a fabric with
real switch processes on Mininet, and the simulator (:mod:`simulator`) models one at
any scale. Both run the same *experiment*: the same scenario file, the same seeded
arrivals, sizes and host roles, the same fabric, the same ECMP hash, and the same
results, goals and plots. That definition is this package, so that an engine is
only the way it moves the bytes. Nothing here needs root, Mininet or a controller.

The data flows through the modules in this order::

    scenario          the YAML file, validated once into frozen dataclasses
      scenario_sched  its ``scheduling`` section (the ``scheduled`` mode)
      scenario_sim    its ``simulation`` section (only ``kvfabric simulate`` reads it)
    kvsize            real KV bytes -> lab bytes, and the ratios a run stands for
    roles             which hosts send, receive and carry background
    flows             a flow's 5-tuple, the receiver's port, the source ports for ECMP
    arrivals          the seeded schedule: same transfers, offsets and ports per mode
    fabric            the fabric a run builds (rates scaled, cables slowed, free ports)
    ecmp              the data plane's ECMP and flowlet hash, computed ahead of time
    censored          statistics with timed-out transfers as right-censored values
    goals             what a run is judged against
    results           results.json and the comparison table
      references      every mode against the simulator's spray and bound, per phase
    plots             the CDF and the sweep's plot
    sweep             a sweep file: a scenario over a grid of values
    progress          the progress bar of long runs
    errors            the exceptions below

Public API (everything else is internal to its module)::

    Scenario, load_scenario, parse_scenario, Tool, ModeName   experiment.scenario
    kv_bytes, preset, PRESETS, scale_to_lab                  experiment.kvsize
    resolve_roles, Roles                                     experiment.roles
    FlowKey, RECEIVER_PORT, ECMP_PORTS                       experiment.flows
    generate, Schedule, Arrival                              experiment.arrivals
    fabric_from_params, lab_fabric, write_fabric             experiment.fabric
    EcmpOracle, crc16_arc                                    experiment.ecmp
    build_results, markdown_table, write_results             experiment.results
    plot_cdf, plot_sweep                                     experiment.plots
    Sweep, load_sweep, write_sweep                           experiment.sweep
    Progress                                                 experiment.progress

Errors (experiment.errors)::

    ExperimentError
     +-- ScenarioError   file:line:col: key.path: message
     +-- FabricError
     +-- (the lab's LabError, the simulator's ClusterError)

Modules are imported on demand: ``import experiment`` imports nothing else.
"""
