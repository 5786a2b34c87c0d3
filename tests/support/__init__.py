"""Helpers shared by the tests and the benchmarks (which import them as ``tests.support``).

- :mod:`tests.support.netns`: network namespaces and veth pairs named after this
  process, removed by name on exit.
"""
