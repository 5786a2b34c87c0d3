"""kvfabric: steer KV-cache transfers onto the least-loaded paths of a P4 leaf-spine fabric.

This package is the ``kvfabric`` command and what a KV sender imports: ``cli`` is the
console script, with one subcommand per module of ``commands``; ``client`` is what a
sender calls to get its transfer a path and report it (stdlib only); ``tutorials`` runs
p4lang/tutorials unmodified on kvfabric's switch. Two helpers serve them all:
``suggest`` (guessing the name a user meant, for every error message) and ``procname``
(the process name a BMv2 shim asks for). The controller, the switch, the lab and the
simulator are packages of their own (:mod:`controller`, :mod:`softswitch`,
:mod:`lab`, :mod:`simulator`).
"""

__version__ = "0.1.0"
