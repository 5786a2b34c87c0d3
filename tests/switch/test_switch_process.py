"""SwitchProcess's two-step start: launch many, wait together, by line or by connect."""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path

import grpc
import pytest
from finsy.proto import p4r, p4r_grpc

from lab.procs import alive
from softswitch.switch.process import LaunchError, SwitchProcess

NO_P4 = ["--no-p4", "--", "--grpc-server-addr"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def capabilities(address: str) -> str:
    with grpc.insecure_channel(address) as channel:
        reply = p4r_grpc.P4RuntimeStub(channel).Capabilities(p4r.CapabilitiesRequest(), timeout=10)
    return str(reply.p4runtime_api_version)


def test_switches_launched_together_are_ready_by_their_log_line(tmp_path: Path) -> None:
    """Output to a log file: the ready line (and the real port) is read from the log."""
    processes = [
        SwitchProcess([*NO_P4, "127.0.0.1:0"], log_path=tmp_path / f"s{i}.log", new_session=True)
        for i in range(2)
    ]
    try:
        for process in processes:
            process.launch()
        deadline = time.monotonic() + 60
        for process in processes:
            process.wait_ready(deadline)
        for i, process in enumerate(processes):
            assert process.address.startswith("127.0.0.1:")
            assert not process.address.endswith(":0")
            assert capabilities(process.address)
            log = (tmp_path / f"s{i}.log").read_text()
            assert f"Server listening on {process.address}" in log
        pids = [p.pid for p in processes]
    finally:
        codes = [p.stop() for p in processes]
        for process in processes:
            process.close()
    assert codes == [0, 0]
    assert not any(alive(pid) for pid in pids)
    assert all((tmp_path / f"s{i}.log").exists() for i in range(2))  # close keeps a log


def test_a_switch_is_ready_once_its_address_accepts_connections(tmp_path: Path) -> None:
    """ready_addr: readiness by connecting, for targets whose ready line is not read."""
    address = f"127.0.0.1:{free_port()}"
    with SwitchProcess(
        [*NO_P4, address], ready_addr=address, log_path=tmp_path / "switch.log"
    ) as process:
        assert process.address == address
        assert capabilities(address)


def test_a_command_that_exits_is_a_launch_error_with_its_status_and_output(
    tmp_path: Path,
) -> None:
    command = [sys.executable, "-c", "import sys; print('cannot start'); sys.exit(3)"]
    process = SwitchProcess(
        command=command, ready_addr=f"127.0.0.1:{free_port()}", log_path=tmp_path / "x.log"
    )
    try:
        with pytest.raises(LaunchError, match="exited with status 3") as exc:
            process.start()
        assert exc.value.status == 3
        assert "cannot start" in exc.value.output
    finally:
        process.close()


def test_a_switch_not_ready_by_the_deadline_is_left_running(tmp_path: Path) -> None:
    """wait_ready checks at least once, reports status None, and does not stop the process."""
    command = [sys.executable, "-c", "import time; time.sleep(600)"]
    process = SwitchProcess(
        command=command,
        ready_addr=f"127.0.0.1:{free_port()}",
        log_path=tmp_path / "sleeper.log",
        new_session=True,
    ).launch()
    try:
        with pytest.raises(LaunchError, match="did not get ready") as exc:
            process.wait_ready(time.monotonic())
        assert exc.value.status is None
        assert process.running()
    finally:
        process.close()
    assert not alive(process.pid)


def test_argv_and_a_whole_command_are_exclusive() -> None:
    with pytest.raises(ValueError, match="not both"):
        SwitchProcess(["--no-p4"], command=["simple_switch_grpc", "--no-p4"])
