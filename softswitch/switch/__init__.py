"""The software switch process: the interpreter driven like BMv2's simple_switch_grpc.

argv.py       simple_switch_grpc's command line -> SwitchOptions
io.py         AF_PACKET raw sockets, one per ``-i PORT@IFACE``
pcap.py       ``--pcap`` writer
offload.py    checksum/segmentation offloads of the attached interfaces
dataplane.py  the seam to the interpreter: device config -> Pipeline (value sets bound)
p4rt/         the P4Runtime server: arbitration and roles, pipeline config, write, read,
              stream, one-shot selector programming; and a small synchronous client
main.py       the event loop tying packets, the pipeline and the gRPC server together
process.py    a ``kvfabric switch`` child process, started and stopped by pid
"""
