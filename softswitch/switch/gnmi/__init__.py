"""The switch's gNMI server: its ports' speeds and statuses in OpenConfig's terms.

BMv2 has no port speed to read; Stratum serves OpenConfig over gNMI beside P4Runtime,
and ONOS and finsy read a port's ``oper-status`` and ``port-speed`` there. This switch
does the same, on the P4Runtime server's port, from
:class:`~softswitch.switch.interfaces.Interfaces`. Modules, in the order a request
goes through them::

    tree        the leaves served (paths, values), path matching, gNMI's errors
    subscribe   Subscribe: ONCE, POLL, STREAM (ON_CHANGE, SAMPLE)
    service     the gRPC face: Capabilities, Get, Set, Subscribe
"""
