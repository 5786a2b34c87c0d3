# mypy: ignore-errors
"""A p4runtime-shell session against a running switch; run with .venv-p4rt's Python.

    python p4rt_shell_session.py GRPC_ADDR P4INFO_TXT DEVICE_CONFIG_JSON

It uses p4runtime-shell's Python API exactly as its documentation shows a user
typing it, and talks to the test over stdin/stdout, one JSON object per line:
it prints what it read, and waits for a line on stdin whenever the test has to
send packets before the next step.
"""

import json
import sys

import p4runtime_sh.shell as sh


def say(**kw):
    print(json.dumps(kw), flush=True)


def wait():
    sys.stdin.readline()


def main():
    addr, p4info, device_config = sys.argv[1:4]
    sh.setup(
        device_id=0,
        grpc_addr=addr,
        election_id=(0, 1),
        config=sh.FwdPipeConfig(p4info, device_config),
        verbose=False,
    )
    try:
        te = sh.TableEntry("MyIngress.l2")(action="MyIngress.forward")
        te.match["hdr.ethernet.dst"] = "02:00:00:00:00:0b"
        te.action["port"] = "2"
        te.insert()
        cpu = sh.TableEntry("MyIngress.l2")(action="MyIngress.to_cpu")
        cpu.match["hdr.ethernet.dst"] = "02:00:00:00:00:fe"
        cpu.insert()
        lpm = sh.TableEntry("MyIngress.ipv4_lpm")(action="MyIngress.set_nhop")
        lpm.match["hdr.ipv4.dst"] = "10.0.3.0/24"
        lpm.action["port"] = "3"
        lpm.action["dmac"] = "02:00:00:00:00:0c"
        lpm.insert()
        entries = []
        for entry in sh.TableEntry("MyIngress.l2").read():
            entries.append(
                {
                    "dst": entry.match["hdr.ethernet.dst"].exact.value.hex(),
                    "action": entry.action.action_name,
                }
            )
        [route] = list(sh.TableEntry("MyIngress.ipv4_lpm").read())
        lpm_match = route.match["hdr.ipv4.dst"].lpm
        say(
            step="entries",
            l2=sorted(entries, key=lambda e: e["dst"]),
            lpm=[lpm_match.value.hex(), lpm_match.prefix_len],
        )
        wait()  # the test sends frames through the switch
        counter = sh.CounterEntry("MyIngress.port_counter")
        counter.index = 1
        [cell] = list(counter.read())
        say(step="counter", packets=cell.packet_count, bytes=cell.byte_count)
        packet_in = sh.PacketIn()
        say(step="sniffing")
        wait()  # the test sends a frame that the l2 entry punts
        got = [
            {
                "payload": m.packet.payload.hex(),
                "metadata": {md.metadata_id: md.value.hex() for md in m.packet.metadata},
            }
            for m in packet_in.sniff(timeout=3)
        ]
        say(step="packet_in", packets=got)
        out = sh.PacketOut(payload=bytes.fromhex(sys.stdin.readline().strip()))
        out.metadata["egress_port"] = "3"
        out.send()
        say(step="packet_out")
        wait()
    finally:
        sh.teardown()
    say(step="done")


if __name__ == "__main__":
    main()
