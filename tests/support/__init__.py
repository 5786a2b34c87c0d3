"""Development tools shared by the tests and the benchmarks (imported as ``tests.support``).

- :mod:`tests.support.asyncio_tests`: ``run_async``, an ``async def`` test run in its
  own event loop;
- :mod:`tests.support.cli`: ``python -m kvfabric.cli`` as a child process;
- :mod:`tests.support.controllers`: controller processes on a fabric file and their
  fixtures (``pipeline``, ``controllers``);
- :mod:`tests.support.netns`: network namespaces and veth pairs named after this
  process, removed by name on exit;
- :mod:`tests.support.ports`: a free local TCP port;
- :mod:`tests.support.processes`: stopping a child process by its pid;
- :mod:`tests.support.p4rt_client`: a synchronous P4Runtime client on raw gRPC stubs;
- :mod:`tests.support.runtime_errors`: the code of the RuntimeConfigError a call raises;
- :mod:`tests.support.stf_suites`: every STF suite of the tree as a table (``make stf``);
- :mod:`tests.support.v1model`: small v1model programs from their pieces.
"""
