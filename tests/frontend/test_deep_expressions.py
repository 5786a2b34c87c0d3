"""Deep expressions: long constant chains fold, too-deep ones are located errors.

Python's recursion limit must never decide: a 501- or 5,000-term constant chain
(``1 + 1 + ... + 1``) compiles to its value, and an expression whose typed form
nests deeper than MAX_EXPR_DEPTH is ``file:line:col: error`` from ``kvfabric
compile`` and INVALID_ARGUMENT from a pipeline push.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from finsy.proto import p4r

from softswitch.errors import P4SourceError
from softswitch.frontend import ir, load_program, parse_text
from softswitch.frontend.typecheck import MAX_EXPR_DEPTH
from softswitch.p4info import device_config as dc
from softswitch.switch.dataplane import load_program_file

from ..switch.harness import Client, ServerThread, fabric, make_device
from .test_typecheck import source

TABLE = "table t { key = { hdr.h.a: exact; } actions = { a; } } apply { t.apply(); }"


def program(tmp_path: Path, consts: str, action_body: str) -> Path:
    path = tmp_path / "deep.p4"
    path.write_text(source(f"action a() {{ {action_body} }} {TABLE}", decls=consts))
    return path


def assigned_constant(prog: ir.Program) -> object:
    (action,) = [a for a in prog.actions if a.local_name == "a"]
    (statement,) = action.body
    assert isinstance(statement, ir.Assign)
    assert isinstance(statement.rhs, ir.Const)
    return statement.rhs.value


def compile_error(path: Path) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "kvfabric.cli", "compile", str(path), "-o", str(path) + ".json"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert out.returncode != 0
    assert "Traceback" not in out.stderr
    return out.stderr


@pytest.mark.parametrize("terms", [501, 5000])
def test_long_constant_chains_fold(tmp_path: Path, terms: int) -> None:
    chain = " + ".join(["1"] * terms)
    path = program(tmp_path, f"const bit<16> DEEP = {chain};", "hdr.h.w = DEEP;")
    assert assigned_constant(load_program(str(path))) == terms
    # in a statement too, and mixed operators
    mixed = " - ".join(["3"] * terms)
    path = program(tmp_path, "", f"hdr.h.w = {mixed};")
    assert assigned_constant(load_program(str(path))) == (3 - 3 * (terms - 1)) & 0xFFFF


@pytest.mark.parametrize("terms", [501, 5000])
def test_the_parser_takes_long_chains_without_recursion(terms: int) -> None:
    chain = " + ".join(["1"] * terms)
    parsed = parse_text(f"const bit<16> DEEP = {chain};")
    assert len(parsed.declarations) == 1


def deep_non_constant(depth: int) -> str:
    """``hdr.h.w + hdr.h.w + ...``: a chain whose typed form is ``depth`` levels deep."""
    # the chain's top is level 1; its leftmost operand (hdr.h.w) adds 3 levels
    return " + ".join(["hdr.h.w"] * (depth - 2))


def test_the_deepest_allowed_expression_loads_into_a_dataplane(tmp_path: Path) -> None:
    path = program(tmp_path, "", f"hdr.h.w = {deep_non_constant(MAX_EXPR_DEPTH)};")
    load_program_file(str(path), 511, 255)  # front-end and the interpreter's code generator


@pytest.mark.parametrize(
    ("consts", "body"),
    [
        ("", f"hdr.h.w = {deep_non_constant(MAX_EXPR_DEPTH + 1)};"),
        ("", "hdr.h.w = hdr.h.w + " + "1 + " * 5000 + "hdr.h.w;"),
        ("const bit<16> DEEP = " + "-" * 501 + "1;", "hdr.h.w = DEEP;"),
        ("", "hdr.h.w = " + "hdr.h.w + (" * 120 + "hdr.h.w" + ")" * 120 + ";"),
    ],
    ids=["chain", "5000-term chain", "501 negations", "right-nested"],
)
def test_too_deep_is_a_located_error(tmp_path: Path, consts: str, body: str) -> None:
    path = program(tmp_path, consts, body)
    with pytest.raises(P4SourceError) as info:
        load_program(str(path))
    assert info.value.loc.file == str(path)
    assert f"expression nested more than {MAX_EXPR_DEPTH} deep" in str(info.value)
    assert f"{path}:{info.value.loc.line}:{info.value.loc.col}: error: expression nested" in (
        compile_error(path)
    )


def test_a_pipeline_push_with_a_too_deep_expression_is_invalid_argument(tmp_path: Path) -> None:
    info, config_bytes = fabric()
    config = dc.decode(config_bytes)
    deep = config.program.replace(
        "action flood(bit<16> group) {",
        "action flood(bit<16> group) { std.mcast_grp = " + "-" * 501 + "group;",
        1,
    )
    assert deep != config.program
    server = ServerThread(make_device())
    client = Client(server.address)
    try:
        request = p4r.SetForwardingPipelineConfigRequest(
            device_id=0, action=p4r.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT
        )
        request.config.p4info.CopyFrom(info)
        request.config.p4_device_config = dc.encode(dc.make_device_config(deep, config.file, info))
        with pytest.raises(grpc.RpcError) as err:
            client.stub.SetForwardingPipelineConfig(request)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "expression nested more than" in str(err.value.details())
    finally:
        client.close()
        server.stop()
