"""Development tools shared by the tests and the benchmarks (imported as ``tests.support``).

- :mod:`tests.support.netns`: network namespaces and veth pairs named after this
  process, removed by name on exit;
- :mod:`tests.support.p4rt_client`: a synchronous P4Runtime client on raw gRPC stubs;
- :mod:`tests.support.stf_suites`: every STF suite of the tree as a table (``make stf``).
"""
