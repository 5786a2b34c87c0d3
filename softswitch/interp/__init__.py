"""The interpreter: a typed program compiled into Python, run per packet.

An :class:`~softswitch.frontend.ir.Program` is compiled once per pipeline load into
Python source, whose closures run every packet. Modules, in the order data flows
through them::

    analysis      facts about the IR that code generation needs before it writes a body
    classes       generated Python classes for header, header union and struct types
    values        run-time values and packet buffers
    codegen       the program -> Python source, once per load
    calls         code generation of calls: actions, functions, blocks, externs
    extern_funcs  the extern functions a program declares and the target implements
    objects       the runtime objects of a program (tables, profiles, externs, value sets)
    pipeline      the v1model architecture around the compiled blocks (simple_switch)
    trace         per-packet trace messages, in the words of BMv2's simple_switch log
"""
