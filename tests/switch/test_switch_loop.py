"""The switch loop over veth pairs (root): forwarding, packet-in/out, digests, pcap.

The pipeline is :class:`PatchDataplane` (a fixed two-port patch with CPU
punting) so that the packet path, the P4Runtime stream and the pcap files are
tested apart from the interpreter; tests/switch/test_switch_program.py runs
real programs.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from finsy.proto import U128, p4r
from scapy.layers.l2 import Ether

from softswitch.switch.argv import SwitchOptions
from softswitch.switch.main import Switch, run_switch
from softswitch.switch.pcap import read_pcap

from .conftest import VethPair
from .fakes import load_p4info, patch_loader
from .harness import Client, pipeline_request

pytestmark = pytest.mark.root
PROBE = str(Path(__file__).with_name("netns_probe.py"))
INFO = load_p4info()


@dataclass
class Running:
    switch: Switch
    address: str
    pairs: list[VethPair]
    pcap_dir: Path


@pytest.fixture
def running(veth_pairs: list[VethPair], tmp_path: Path) -> Iterator[Running]:
    a, b = veth_pairs[0], veth_pairs[1]
    options = SwitchOptions(
        no_p4=True,
        interfaces=((1, a.outside), (2, b.outside)),
        cpu_port=255,
        grpc_addr="127.0.0.1:0",
        pcap_dir=str(tmp_path),
    )
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    ready = threading.Event()
    result: dict[str, object] = {}

    def on_ready(switch: Switch, port: int) -> None:
        result["switch"], result["port"] = switch, port
        ready.set()

    def main() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(
                run_switch(options, loader=patch_loader, on_ready=on_ready, stop=stop)
            )
        except BaseException as exc:  # noqa: BLE001 - reported by the fixture
            result["error"] = exc
            ready.set()

    thread = threading.Thread(target=main, daemon=True)
    thread.start()
    assert ready.wait(20), "switch did not start"
    if "error" in result:
        raise result["error"]  # type: ignore[misc]
    yield Running(result["switch"], f"127.0.0.1:{result['port']}", veth_pairs, tmp_path)  # type: ignore[arg-type]
    loop.call_soon_threadsafe(stop.set)
    thread.join(10)
    loop.close()


def probe(
    netns: str, send: str, recv: str, frames: list[bytes], timeout: float = 1.5
) -> list[bytes]:
    proc = subprocess.run(
        ["ip", "netns", "exec", netns, sys.executable, PROBE, send, recv, str(timeout)]
        + [f.hex() for f in frames],
        check=True,
        capture_output=True,
        text=True,
    )
    return [bytes.fromhex(line) for line in proc.stdout.split()]


def frame(src: int, ether_type: int = 0x0800, payload: bytes = b"kvfabric") -> bytes:
    return bytes(
        Ether(src=f"02:00:00:00:00:{src:02x}", dst="02:00:00:00:00:ff", type=ether_type) / payload
    )


def connect(running: Running) -> Client:
    client = Client(running.address)
    client.arbitrate(1)
    client.arbitration()
    client.stub.SetForwardingPipelineConfig(pipeline_request(election_id=1))
    return client


def test_frames_are_forwarded_between_veths_and_captured(running: Running) -> None:
    a, b = running.pairs[0], running.pairs[1]
    client = connect(running)
    try:
        sent = [frame(i) for i in range(1, 4)]
        got = probe(a.netns, a.inside, b.inside, sent)
        assert [g for g in got if g in sent] == sent
        back = probe(a.netns, b.inside, a.inside, [frame(9)])
        assert frame(9) in back
    finally:
        client.close()
    ins = [f for _, f in read_pcap(running.pcap_dir / f"{a.outside}_in.pcap")]
    outs = [f for _, f in read_pcap(running.pcap_dir / f"{b.outside}_out.pcap")]
    assert all(f in ins for f in sent)
    assert all(f in outs for f in sent)


def test_packet_in_and_packet_out(running: Running) -> None:
    a, b = running.pairs[0], running.pairs[1]
    client = connect(running)
    try:
        punted = frame(5, ether_type=0x9000)
        probe(a.netns, a.inside, a.inside, [punted], timeout=0.3)
        msg = client.receive()
        assert msg.WhichOneof("update") == "packet"
        assert msg.packet.payload == punted
        [md] = [m for m in msg.packet.metadata if m.metadata_id == 1]
        assert md.value == b"\x01"  # ingress_port 1, canonical

        payload = frame(6)
        out = p4r.PacketOut(payload=payload)
        out.metadata.add(metadata_id=1, value=b"\x00\x02")  # padded form accepted
        listener = subprocess.Popen(
            ["ip", "netns", "exec", b.netns, sys.executable, PROBE, b.inside, b.inside, "2"],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            import time

            time.sleep(0.5)
            client.send(p4r.StreamMessageRequest(packet=out))
            stdout, _ = listener.communicate(timeout=10)
        finally:
            if listener.poll() is None:
                listener.kill()
                listener.wait()
        assert payload.hex() in stdout.split()
    finally:
        client.close()


def test_digest_lists_and_acks(running: Running) -> None:
    a = running.pairs[0]
    client = connect(running)
    try:
        digest_id = INFO.digests[0].preamble.id
        entry = p4r.DigestEntry(digest_id=digest_id)
        entry.config.max_list_size = 2
        entry.config.max_timeout_ns = 50_000_000
        entry.config.ack_timeout_ns = 10_000_000_000
        request = p4r.WriteRequest(
            device_id=0,
            election_id=U128.encode(1),
            updates=[p4r.Update(type=p4r.Update.INSERT, entity=p4r.Entity(digest_entry=entry))],
        )
        client.stub.Write(request)
        probe(a.netns, a.inside, a.inside, [frame(1), frame(2), frame(1)], timeout=0.3)
        msg = client.receive()
        assert msg.WhichOneof("update") == "digest"
        assert msg.digest.digest_id == digest_id
        members = [[m.bitstring for m in d.struct.members] for d in msg.digest.data]
        assert members == [
            [b"\x02\x00\x00\x00\x00\x01", b"\x01"],
            [b"\x02\x00\x00\x00\x00\x02", b"\x01"],
        ]
        client.send(
            p4r.StreamMessageRequest(
                digest_ack=p4r.DigestListAck(digest_id=digest_id, list_id=msg.digest.list_id)
            )
        )
        # an ack of an unknown list is a stream error, the stream stays up
        client.send(
            p4r.StreamMessageRequest(digest_ack=p4r.DigestListAck(digest_id=digest_id, list_id=999))
        )
        error = client.receive()
        assert error.WhichOneof("update") == "error"
        assert error.error.WhichOneof("details") == "digest_list_ack"
    finally:
        client.close()
