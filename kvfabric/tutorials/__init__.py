"""p4lang/tutorials run unmodified on kvfabric: the exercises' checks and their runner.

``runner`` is ``make tutorials TUTORIALS=DIR``: it runs each exercise's own Makefile and
Mininet topology with kvfabric's switch behind BMv2's names, and checks it by
``exercises`` (what each exercise's README says its solution does, as Mininet steps and
checks) through ``mininet_session`` (the Mininet CLI driven through pipes, one command
per prompt). ``p4config_pb2`` is PI's ``p4.tmp.P4DeviceConfig`` message, which the
tutorials' own venv imports.
"""
