"""The subcommands of the ``kvfabric`` console script.

Each subcommand is one module here with two functions::

    def configure(parser: argparse.ArgumentParser) -> None   # add its arguments
    def run(args: argparse.Namespace) -> int                  # do the work, return exit status

A subcommand whose command line is not argparse-shaped (``switch`` follows
simple_switch_grpc's grammar) sets ``RAW_ARGV = True`` and receives the untouched
argument list as ``args.argv``. The modules, one per subcommand (its name with ``_``
for ``-``):

- the switch: ``compile`` (a P4 program's P4Info and device config), ``stf`` (a program
  against a p4c STF test), ``switch`` (a software switch with simple_switch_grpc's
  command line), ``switch_cli`` (simple_switch_CLI's client side), ``bmv2_shims``
  (BMv2's and p4c's executable names, running kvfabric);
- the controller: ``controller`` (the service for a fabric), ``check_config`` (validate
  a fabric file), ``report`` (the weekly review of its transfer logs);
- the experiment: ``experiment`` (a scenario on the emulated fabric, as root),
  ``simulate`` (a scenario on a simulated fabric), ``bench`` (the benchmarks);

and ``options``, the command-line pieces several of them share.
"""

from __future__ import annotations

SUBCOMMANDS: dict[str, str] = {
    "compile": "Compile a P4 program: P4Info (p4c-identical) and the target's device config",
    "stf": "Run a P4 program against an STF test file",
    "switch": "Run a software switch with simple_switch_grpc's command line",
    "controller": "Run the kvfabric controller service",
    "experiment": "Run the emulated-fabric experiment",
    "simulate": "Run a scenario on a simulated fabric: --engine flow (flow-level, any scale) "
    "or packet (ns-3, TCP packets through queues, small fabrics)",
    "bench": "Run benchmarks",
    "check-config": "Validate a topology configuration file",
    "report": "The weekly review of transfer logs: one self-contained HTML report",
    "switch-cli": "simple_switch_CLI for a running kvfabric switch (commands on stdin)",
    "bmv2-shims": "Write simple_switch_grpc, simple_switch_CLI, p4c, p4c-bm2-ss shims into DIR",
}
