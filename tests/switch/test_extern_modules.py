"""``kvfabric switch --load-modules``: extern functions a program declares,
implemented by Python files, for the program of the command line and for
the device configs that SetForwardingPipelineConfig brings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from finsy.proto import p4r, p4r_grpc

from softswitch.errors import RuntimeConfigError
from softswitch.interp.extern_funcs import load_modules
from softswitch.interp.pipeline import Pipeline
from softswitch.switch.argv import parse_argv
from softswitch.switch.dataplane import load_program_file, make_loader
from softswitch.switch.process import SwitchProcess

COMMAND = [sys.executable, "-m", "kvfabric.cli", "switch"]

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<16> v; }
struct headers { h_t h; }
struct meta { }
extern bit<16> swap_bytes(in bit<16> v);
parser P(packet_in pk, out headers hdr, inout meta m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control N(inout headers hdr, inout meta m) { apply { } }
control I(inout headers hdr, inout meta m, inout standard_metadata_t sm) {
    apply { hdr.h.v = swap_bytes(hdr.h.v); sm.egress_spec = 2; }
}
control E(inout headers hdr, inout meta m, inout standard_metadata_t sm) { apply { } }
control D(packet_out pk, in headers hdr) { apply { pk.emit(hdr); } }
V1Switch(P(), N(), I(), E(), N(), D()) main;
"""

MODULE = """
def swap_bytes(v):
    return ((v & 0xFF) << 8) | (v >> 8)

EXTERN_FUNCTIONS = {"swap_bytes": swap_bytes}
"""


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    program, module = tmp_path / "swap.p4", tmp_path / "swap_externs.py"
    program.write_text(PROGRAM)
    module.write_text(MODULE)
    return program, module


def test_load_modules_is_a_comma_separated_repeatable_option() -> None:
    options = parse_argv(["--no-p4", "--load-modules", "a.py,b.py", "--load-modules=c.py"])
    assert options.modules == ("a.py", "b.py", "c.py")
    assert parse_argv(["--no-p4"]).modules == ()


def test_pushed_device_configs_use_the_loaded_modules(files: tuple[Path, Path]) -> None:
    program, module = files
    externs = load_modules([module])
    p4info, device_config, dataplane = load_program_file(str(program), 511, None, externs=externs)
    pipeline = make_loader(511, None, externs=externs)(p4info, device_config)
    for loaded in (dataplane, pipeline):
        assert isinstance(loaded, Pipeline)
        assert loaded.process(1, bytes([0x12, 0x34, 0xAA])) == [(2, bytes([0x34, 0x12, 0xAA]))]
    with pytest.raises(RuntimeConfigError, match="swap_bytes: no implementation") as err:
        make_loader(511, None)(p4info, device_config)
    assert err.value.code == "INVALID_ARGUMENT"


def test_the_switch_process_loads_its_modules(files: tuple[Path, Path]) -> None:
    program, module = files
    argv = [str(program), "--load-modules", str(module), "--", "--grpc-server-addr", "127.0.0.1:0"]
    with SwitchProcess(argv) as switch, grpc.insecure_channel(switch.address) as channel:
        stub = p4r_grpc.P4RuntimeStub(channel)
        reply = stub.GetForwardingPipelineConfig(
            p4r.GetForwardingPipelineConfigRequest(device_id=0), timeout=10
        )
        assert reply.config.p4info.pkg_info.arch == "v1model"
    for extra, message in (
        ([], "swap_bytes: no implementation is loaded"),
        (["--load-modules", str(module.with_name("absent.py"))], "absent.py: error: no such file"),
    ):
        proc = subprocess.run(
            [*COMMAND, str(program), *extra, "--", "--grpc-server-addr", "127.0.0.1:0"],
            check=False, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert proc.returncode == 1, proc.stderr
        assert message in proc.stderr
        assert "Traceback" not in proc.stderr
