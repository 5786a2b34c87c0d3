"""lab: the emulated leaf-spine fabric (Mininet) that runs the experiment.

The question the lab answers is whether topology-aware placement of KV-cache
transfers beats ECMP *on a given fabric shape and load*, and by how much at each
percentile, with real switch processes, a real controller and real TCP. The
experiment itself (scenario, arrivals, sizes, roles, the fabric a run builds, the
ECMP hash, results, goals, plots, sweeps) is :mod:`experiment`'s, shared with the
simulator; this package only emulates it. It builds the fabric the controller
reads, runs every mode on identical traffic, and says when a run measured its own
limits instead of the fabric.

The data flows through the modules in this order::

    experiment.*  (scenario, arrivals, roles, fabric, ecmp: what to run)
      -> traffic    (iperf3 background steered onto chosen spines; ecmp: the P4 hash)
      -> room       (which spines have room for a transfer; cables and their interfaces)
    topo          (Mininet graph, data only)
      -> links, nodes (htb + pfifo, MTU 9000, no offloads; P4Switch process per switch)
      -> net        (Lab: build, start, tear down by pid, leftovers check)
      -> netns      (sockets made inside a host's network namespace)
      -> procs      (the process table: every process started, stopped by pid)
    control       (FabricControl: the controller service's API)
    kvtransfer    (KV sender and receiver)
    timescale     (the controller's time constants at the run's time scale)
    monitor -> validity (CPU, drops nothing explains)
    run (one experiment), sweep (a grid of them), command (``kvfabric experiment``),
    mn_custom (the fabric for ``mn --custom``)

What the lab cannot do: this kernel has **no netem**, so link delay, jitter and loss
are not emulated; links have rates (htb) and queues (pfifo) only, and a "failed" link
is an interface taken down. Switches are Python processes, so links run at 10-20 Mb/s
with 9000-byte frames; a run reports the real-world transfer it stands for.

Public API (everything else is internal to its module)::

    FabricTopo                                       lab.topo
    P4Switch, Bmv2Switch, LabHost                    lab.nodes
    ShapedLink, ShapedIntf                           lab.links
    Lab, leftovers                                   lab.net
    FabricControl, HttpControl, ControllerProcess    lab.control
    send, Receiver, TransferJob, Outcome             lab.kvtransfer
    load_spine, plan_background, Background          lab.traffic
    Experiment, run_experiment                       lab.run
    run_sweep                                        lab.sweep

Errors (``errors``, below experiment.errors.ExperimentError)::

    LabError
     +-- SwitchStartError (also an experiment FabricError)
     +-- TrafficError
     +-- ControlError
     +-- TimeScaleError   (lab.timescale)

Modules are imported on demand: ``import lab`` does not import Mininet.
"""
