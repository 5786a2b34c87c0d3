"""``kvfabric switch`` as a process: argv errors, bind-when-ready, clean stop."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from finsy.proto import p4i, p4r, p4r_grpc
from google.protobuf import text_format

from softswitch.switch.process import SwitchProcess

from .harness import FABRIC_P4

COMMAND = [sys.executable, "-m", "kvfabric.cli", "switch"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--bogus", "--no-p4"], "unknown option --bogus"),
        ([], "a program is required"),
        (["--no-p4", "--", "--cpu-port", "x"], "expected an integer"),
    ],
)
def test_bad_command_line_is_a_usage_error(argv: list[str], message: str) -> None:
    proc = subprocess.run(
        [*COMMAND, *argv], check=False, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2
    assert "usage: kvfabric switch" in proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_missing_program_file_is_a_clear_error() -> None:
    proc = subprocess.run(
        [*COMMAND, "/nonexistent/prog.json", "--", "--grpc-server-addr", "127.0.0.1:0"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "prog.json" in proc.stderr


@pytest.mark.root
def test_a_missing_interface_is_a_clear_error() -> None:
    proc = subprocess.run(
        [*COMMAND, "-i", "1@nosuchif0", "--no-p4", "--", "--grpc-server-addr", "127.0.0.1:0"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "nosuchif0" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_serves_when_ready_and_stops_cleanly_on_sigterm() -> None:
    port = free_port()
    proc = subprocess.Popen(
        [*COMMAND, "--no-p4", "--nanolog", "ipc:///x", "--", "--grpc-server-addr",
         f"127.0.0.1:{port}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == f"Server listening on 127.0.0.1:{port}"
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = p4r_grpc.P4RuntimeStub(channel)
            reply = stub.Capabilities(p4r.CapabilitiesRequest(), timeout=5)
            assert reply.p4runtime_api_version
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=15)
        assert proc.returncode == 0
        assert "--nanolog ignored" in stderr
        assert "Traceback" not in stderr
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_sigint_stops_it_too() -> None:
    port = free_port()
    proc = subprocess.Popen(
        [*COMMAND, "--no-p4", "--", "--grpc-server-addr", f"127.0.0.1:{port}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        proc.stdout.readline()
        time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=15)
        assert proc.returncode == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_compiled_device_config_is_a_program(tmp_path: Path) -> None:
    config, p4info = tmp_path / "fabric.json", tmp_path / "fabric.p4info.txtpb"
    subprocess.run(
        [sys.executable, "-m", "kvfabric.cli", "compile", str(FABRIC_P4), "-o", str(config),
         "--p4runtime-files", str(p4info)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    with SwitchProcess([str(config), "--", "--grpc-server-addr", "127.0.0.1:0"]) as switch:
        with grpc.insecure_channel(switch.address) as channel:
            stub = p4r_grpc.P4RuntimeStub(channel)
            reply = stub.GetForwardingPipelineConfig(
                p4r.GetForwardingPipelineConfigRequest(device_id=0), timeout=10
            )
        assert reply.config.p4info == text_format.Parse(p4info.read_text(), p4i.P4Info())
        assert reply.config.p4_device_config == config.read_bytes()


def test_a_program_with_an_error_is_reported_at_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.p4"
    bad.write_text(FABRIC_P4.read_text().replace("bit<48> dst;", "bit<48> dst", 1))
    proc = subprocess.run(
        [*COMMAND, str(bad), "--", "--grpc-server-addr", "127.0.0.1:0"],
        check=False, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 1
    assert f"{bad}:" in proc.stderr and "error" in proc.stderr
    assert "Traceback" not in proc.stderr
