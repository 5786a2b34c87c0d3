"""The switch's P4Runtime server: the P4Runtime service over the runtime state.

:class:`~softswitch.switch.p4rt.device.Device` is everything the server knows, with no
gRPC in it; ``service`` is its gRPC face (grpc.aio). Modules::

    device           the P4Runtime device: requests in BMv2's order, streams' queues
    service          the gRPC face of the device
    arbitration      election ids, roles, the primary and its backups
    roles            role configurations: which part of the pipeline a role may drive
    pipeline_config  SetForwardingPipelineConfig and GetForwardingPipelineConfig
    codec            P4Runtime values and ids: bytestrings, and the P4Info index
    entries          table entries, actions and replicas <-> runtime objects
    oneshot          one-shot action selector programming
    write            Write: P4Runtime updates -> calls on the runtime state
    write_status     the google.rpc.Status of a failed Write, within what clients accept
    read             Read: entity filters -> entities of the runtime state
    stream           StreamChannel payloads: packet-in/out, digests and their acks,
                     idle timeouts
"""
