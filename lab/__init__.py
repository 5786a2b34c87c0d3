"""lab: the emulated leaf-spine fabric (Mininet) and the experiment that runs on it.

The question the lab answers is whether topology-aware placement of KV-cache
transfers beats ECMP *on a given fabric shape and load*, and by how much at each
percentile. It builds the fabric the controller reads, runs every mode on identical
traffic, and says when a run measured its own limits instead of the fabric.

The data flows through the modules in this order::

    scenario  (YAML: fabric shape, roles, transfer size, arrivals, background, events)
      -> kvsize     (real KV bytes -> lab bytes; the ratios a run stands for)
      -> arrivals   (seeded schedule: same transfers, offsets and ECMP ports per mode)
      -> traffic    (iperf3 background steered onto chosen spines; ecmp: the P4 hash)
    fabric (lab rates, free ports) -> topo (Mininet graph, data only)
      -> links, nodes (htb + pfifo, MTU 9000, no offloads; P4Switch process per switch)
      -> net        (Lab: build, start, tear down by pid, leftovers check)
    control (FabricControl: the controller service's API), kvtransfer (sender/receiver)
    monitor -> validity (CPU, drops nothing explains) -> results, plots (json, md, png)
    run (one experiment), sweep (a grid of them); kvfabric/commands/experiment.py

What the lab cannot do: this kernel has **no netem**, so link delay, jitter and loss
are not emulated; links have rates (htb) and queues (pfifo) only, and a "failed" link
is an interface taken down. Switches are Python processes, so links run at 10-20 Mb/s
with 9000-byte frames; a run reports the real-world transfer it stands for.

Public API (everything else is internal to its module)::

    Scenario, load_scenario, parse_scenario         lab.scenario
    kv_bytes, preset, PRESETS, scale_to_lab          lab.kvsize
    generate, Schedule                               lab.arrivals
    FabricTopo                                       lab.topo
    P4Switch, Bmv2Switch, LabHost                    lab.nodes
    ShapedLink, ShapedIntf                           lab.links
    Lab, leftovers                                   lab.net
    FabricControl, HttpControl, Placement, FlowKey   lab.control
    send, Receiver, Transfer                         lab.kvtransfer
    load_spine, plan_background, Background          lab.traffic
    EcmpOracle                                       lab.ecmp
    Experiment, run_experiment                       lab.run
    load_sweep, run_sweep                            lab.sweep
    build_results, markdown_table, write_results     lab.results

Errors (lab.errors)::

    LabError
     +-- ScenarioError   file:line:col: key.path: message
     +-- FabricError
     |    +-- SwitchStartError
     +-- TrafficError
     +-- ControlError

Modules are imported on demand: ``import lab`` does not import Mininet.
"""
