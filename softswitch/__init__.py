"""softswitch: a P4_16 / v1model target written in Python.

Data flows through the package in this order::

    frontend/   preprocess -> lex -> parse (AST) -> typecheck -> elaborate (typed IR)
    p4info/     typed IR -> P4Info, identical to p4c's
    interp/     typed IR -> Python closures, compiled once per pipeline load
    runtime/    tables, externs and the v1model architecture that runs the closures
    stf/        p4c's STF test format, run against the runtime
    switch/     the switch process: ports, the pipeline and a P4Runtime server

Errors raised for user input derive from :class:`softswitch.errors.SoftswitchError`
(``errors``: the exceptions of the target, and source locations).
"""
