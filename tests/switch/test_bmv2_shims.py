"""`kvfabric bmv2-shims`: BMv2's and p4c's names, driven as BMv2 launchers drive them.

The switch is started the way p4lang tutorials' launcher starts it (a shell job
``simple_switch_grpc ... &``, stopped with ``kill %simple_switch_grpc``), programmed
by piping commands into ``simple_switch_CLI``, and checked over P4Runtime.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from finsy.proto import p4r, p4r_grpc

from kvfabric.commands.bmv2_shims import SHIMS
from softswitch.p4info import device_config

from .harness import FABRIC_P4
from .test_switch_command import free_port


def shims(tmp_path: Path) -> Path:
    directory = tmp_path / "bin"
    done = subprocess.run(
        [sys.executable, "-m", "kvfabric.cli", "bmv2-shims", str(directory)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == [str(directory / name) for name in SHIMS]
    return directory


def env_with(directory: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{directory}:{env['PATH']}"
    env.pop("PYTHONPATH", None)  # the shims name their own tree, as under sudo
    return env


def test_the_shims_are_executables_on_path(tmp_path: Path) -> None:
    directory = shims(tmp_path)
    env = env_with(directory)
    for name in SHIMS:
        assert shutil.which(name, path=env["PATH"]) == str(directory / name)
    # rewriting is fine; clobbering a file that is not a shim is not
    shims(tmp_path)
    (directory / "p4c").write_text("#!/bin/sh\necho real p4c\n")
    again = subprocess.run(
        [sys.executable, "-m", "kvfabric.cli", "bmv2-shims", str(directory)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert again.returncode == 1 and "was not written by kvfabric bmv2-shims" in again.stderr


def test_the_compilers_take_the_tutorials_command_lines(tmp_path: Path) -> None:
    env = env_with(shims(tmp_path))
    build = tmp_path / "build"
    build.mkdir()
    subprocess.run(
        ["p4c-bm2-ss", "--p4v", "16", "--p4runtime-files", "build/f.p4.p4info.txtpb",
         "-o", "build/f.json", str(FABRIC_P4)],
        cwd=tmp_path, env=env, check=True, capture_output=True,
    )  # fmt: skip
    assert device_config.read(build / "f.json").file == str(FABRIC_P4)
    subprocess.run(
        ["p4c", "--target", "bmv2", "--arch", "v1model", "--p4runtime-files",
         "out/f.p4info.txtpb", "-o", "out", str(FABRIC_P4)],
        cwd=tmp_path, env=env, check=True, capture_output=True,
    )  # fmt: skip
    assert (tmp_path / "out" / "fabric_test.json").is_file()
    assert (tmp_path / "out" / "f.p4info.txtpb").is_file()


LAUNCHER = """\
set -m
simple_switch_grpc --device-id 0 {program} --log-console --thrift-port {thrift} \
  --nanolog ipc:///tmp/bm-0-log.ipc -- --grpc-server-addr 127.0.0.1:{grpc} > switch.log 2>&1 &
echo $! > switch.pid
while [ ! -e stop ]; do sleep 0.1; done
kill %simple_switch_grpc
wait
echo stopped
"""


def wait_listening(port: int, launcher: subprocess.Popen[str]) -> None:
    for _ in range(600):
        if launcher.poll() is not None:
            raise AssertionError("the launcher ended before the switch listened")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"nothing listens on {port}")


@pytest.fixture
def launched(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str], int, int]]:
    env = env_with(shims(tmp_path))
    subprocess.run(
        ["p4c-bm2-ss", "--p4v", "16", "-o", "f.json", str(FABRIC_P4)],
        cwd=tmp_path, env=env, check=True, capture_output=True,
    )  # fmt: skip
    thrift, grpc_port = free_port(), free_port()
    script = LAUNCHER.format(program="f.json", thrift=thrift, grpc=grpc_port)
    launcher = subprocess.Popen(
        ["bash", "-c", script], cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        wait_listening(grpc_port, launcher)
        yield tmp_path, env, thrift, grpc_port
    finally:
        (tmp_path / "stop").touch()
        out, _ = launcher.communicate(timeout=60)
    assert out.strip() == "stopped", out
    pid = int((tmp_path / "switch.pid").read_text())
    assert not Path(f"/proc/{pid}").exists()  # `kill %simple_switch_grpc` stopped the switch


def port_of(replica: p4r.Replica) -> int:
    return int.from_bytes(replica.port, "big") if replica.port else replica.egress_port


COMMANDS = """\
# piped in, as the tutorials pipe sX-commands.txt
table_add MyIngress.ipv4_lpm set_nhop 10.0.2.0/24 => 3 00:00:00:00:02:02
table_add l2 flood 00:00:00:00:00:02 => 1
mc_mgrp_create 1
mc_node_create 0 1 2
mc_node_associate 1 0
mirroring_add 5 7
set_queue_depth 100
set_queue_rate 50 3
table_dump ipv4_lpm
counter_read port_counter 1
"""


def test_simple_switch_cli_programs_a_running_switch(
    launched: tuple[Path, dict[str, str], int, int],
) -> None:
    cwd, env, thrift, grpc_port = launched
    pid = int((cwd / "switch.pid").read_text())
    # named like BMv2's process (15 bytes kept), for `pkill simple_switch` and `ps -C`
    assert Path(f"/proc/{pid}/comm").read_text().strip() == "simple_switch_g"
    done = subprocess.run(
        ["simple_switch_CLI", "--thrift-port", str(thrift)],
        input=COMMANDS, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Entry has been added with handle 0" in done.stdout
    assert "0a000200/24" in done.stdout
    assert "MyIngress.port_counter[1]=  BmCounterValue(packets=0, bytes=0)" in done.stdout
    with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
        stub = p4r_grpc.P4RuntimeStub(channel)

        def read(entity: p4r.Entity) -> list[p4r.Entity]:
            request = p4r.ReadRequest(device_id=0, entities=[entity])
            return [e for reply in stub.Read(request, timeout=30) for e in reply.entities]

        assert len(read(p4r.Entity(table_entry=p4r.TableEntry()))) == 2
        pre = p4r.PacketReplicationEngineEntry
        groups = read(p4r.Entity(packet_replication_engine_entry=pre(
            multicast_group_entry=p4r.MulticastGroupEntry())))  # fmt: skip
        (group,) = [e.packet_replication_engine_entry.multicast_group_entry for e in groups]
        assert group.multicast_group_id == 1
        assert sorted(port_of(r) for r in group.replicas) == [1, 2]
        sessions = read(p4r.Entity(packet_replication_engine_entry=pre(
            clone_session_entry=p4r.CloneSessionEntry())))  # fmt: skip
        (session,) = [e.packet_replication_engine_entry.clone_session_entry for e in sessions]
        assert session.session_id == 5 and [port_of(r) for r in session.replicas] == [7]
    failing = subprocess.run(
        ["simple_switch_CLI", "--thrift-port", str(thrift)],
        input="table_add nope drop 1 =>\n", cwd=cwd, env=env, capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    assert failing.returncode == 1 and "NOT_FOUND" in failing.stderr


def test_the_cli_without_a_switch_says_where_it_looked(tmp_path: Path) -> None:
    env = env_with(shims(tmp_path))
    port = free_port()
    done = subprocess.run(
        ["simple_switch_CLI", "--thrift-port", str(port)],
        input="show_tables\n", env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert f"127.0.0.1:{port}" in done.stderr and "--thrift-port" in done.stderr
