"""The software switch process: the interpreter driven like BMv2's simple_switch_grpc.

Modules::

    argv.py         simple_switch_grpc's command line -> SwitchOptions
    io.py           AF_PACKET raw sockets, one per ``-i PORT@IFACE``
    pcap.py         ``--pcap`` writer
    offload.py      checksum/segmentation offloads of the attached interfaces
    dataplane.py    the seam to the interpreter: device config -> Pipeline (value sets bound)
    packet_path.py  one switch's packet path: ports -> ingress -> traffic manager -> egress
    p4rt/           the P4Runtime server: arbitration and roles, pipeline config, write,
                    read, stream, one-shot selector programming
    interfaces.py   the ports' speeds and oper-status (sysfs, netlink link notifications)
    gnmi/           the gNMI server beside P4Runtime: those speeds and statuses in
                    OpenConfig's terms, as Stratum serves them
    control.py      the control channel: simple_switch_CLI's commands as JSON lines over TCP
    runtime_cli.py  simple_switch_CLI's commands, applied to the running switch's state
    main.py         the event loop tying packets, the pipeline and the gRPC server together
    closing.py      resources that a ``with`` block closes
    process.py      a ``kvfabric switch`` child process, started and stopped by pid
"""
