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
- the experiment: ``simulate`` (a scenario on a simulated fabric), ``bench`` (the
  benchmarks);

and ``options``, the command-line pieces several of them share.

A subcommand that belongs to one part of kvfabric lives in that part's package and is
named in :data:`ELSEWHERE`: ``experiment`` (a scenario on the emulated fabric, as root)
is the lab's (``lab.command``), so that the only Mininet import outside ``lab/`` is gone.

The base install is the client alone; each subcommand needs one of the package's
extras (:data:`EXTRAS`). A subcommand whose extra is not installed still shows in
``--help``, and running it says which extra to install instead of a traceback.
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

ELSEWHERE: dict[str, str] = {
    "experiment": "lab.command",
}
"""Subcommands whose module is not ``kvfabric.commands.<name>``: name -> module."""


def module_name(command: str) -> str:
    """The module that implements ``command``."""
    return ELSEWHERE.get(command, f"kvfabric.commands.{command.replace('-', '_')}")


EXTRAS: dict[str, str] = {
    "compile": "switch",
    "stf": "switch",
    "switch": "switch",
    "switch-cli": "switch",
    "bmv2-shims": "switch",
    "controller": "controller",
    "check-config": "controller",
    "report": "controller",
    "simulate": "simulator",
    "experiment": "lab",
    "bench": "all",
}
"""The extra of the ``kvfabric`` distribution each subcommand needs."""
