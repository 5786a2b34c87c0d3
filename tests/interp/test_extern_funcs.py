"""Extern functions a program declares, implemented by Python modules
(``--load-modules``, as simple_switch loads C++ ones)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kvfabric.cli import main
from softswitch.errors import UnsupportedError
from softswitch.frontend import ir
from softswitch.interp.extern_funcs import (
    ExternFunctionError,
    ExternModuleError,
    load_modules,
)
from softswitch.interp.pipeline import Pipeline
from tests.support.v1model import v1model_program

DECLS = """
header h_t { bit<32> d; bit<8> a; bit<8> b; int<8> s; bit<8> n; }
struct headers { h_t h; }
struct meta { }
extern void set_from(out bit<32> d, bit<32> s);
extern bit<8> add_sat(in bit<8> a, in bit<8> b);
extern bool negative(in int<8> v, inout bit<8> count);
"""

INGRESS = """apply {
    set_from(hdr.h.d, 0xff);
    hdr.h.a = add_sat(hdr.h.a, hdr.h.b);
    if (negative(hdr.h.s, hdr.h.n)) { hdr.h.s = -hdr.h.s; }
    sm.egress_spec = 1;
}"""

MODULE = """
def set_from(d, s):
    return s

def add_sat(a, b):
    return min(a + b, 255)

def negative(v, count):
    return v < 0, count + 1

EXTERN_FUNCTIONS = {"set_from": set_from, "add_sat": add_sat, "negative": negative}
"""


@pytest.fixture
def module(tmp_path: Path) -> Path:
    path = tmp_path / "my_externs.py"
    path.write_text(MODULE)
    return path


def packet(a: int, b: int, s: int, n: int) -> bytes:
    return bytes([0xDE, 0xAD, 0xBE, 0xEF, a, b, s & 0xFF, n])


def test_declared_extern_functions_run_their_python_implementation(
    compile_p4: Callable[..., ir.Program], module: Path
) -> None:
    program = compile_p4(decls=DECLS, ingress=INGRESS)
    pl = Pipeline.load(program, extern_functions=load_modules([module]))
    assert pl.process(0, packet(200, 100, -5, 7)) == [(1, bytes([0, 0, 0, 0xFF, 255, 100, 5, 8]))]
    assert pl.process(0, packet(1, 2, 3, 255)) == [(1, bytes([0, 0, 0, 0xFF, 3, 2, 3, 0]))]


def test_an_extern_function_without_implementation_is_a_located_error(
    compile_p4: Callable[..., ir.Program],
) -> None:
    program = compile_p4(decls=DECLS, ingress=INGRESS)
    with pytest.raises(UnsupportedError, match=r"prog\.p4:\d+:\d+: .*set_from: no implementation"):
        Pipeline.load(program)


def test_a_result_of_the_wrong_shape_ends_the_packet_with_an_error(
    compile_p4: Callable[..., ir.Program], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(MODULE.replace("return v < 0, count + 1", "return v < 0"))
    program = compile_p4(decls=DECLS, ingress=INGRESS)
    pl = Pipeline.load(program, extern_functions=load_modules([bad]))
    with pytest.raises(ExternFunctionError, match=r"negative .*expected a tuple of 2 values"):
        pl.process(0, packet(1, 2, 3, 4))


def test_a_header_parameter_is_refused_at_the_call(
    compile_p4: Callable[..., ir.Program], tmp_path: Path
) -> None:
    path = tmp_path / "hdr.py"
    path.write_text("EXTERN_FUNCTIONS = {'take': lambda h: None}\n")
    program = compile_p4(
        decls=DECLS + "extern void take(in h_t h);",
        ingress="apply { take(hdr.h); }",
    )
    with pytest.raises(UnsupportedError, match=r"prog\.p4:\d+:\d+: .*parameter 'h' of type h_t"):
        Pipeline.load(program, extern_functions=load_modules([path]))


def test_modules_that_do_not_load_are_errors_naming_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.py"
    with pytest.raises(ExternModuleError, match=r"missing\.py: error: no such file"):
        load_modules([missing])
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    with pytest.raises(ExternModuleError, match=r"empty\.py: error: it defines no EXTERN_FUNC"):
        load_modules([empty])
    broken = tmp_path / "broken.py"
    broken.write_text("raise ValueError('nope')\n")
    with pytest.raises(ExternModuleError, match=r"broken\.py: error: loading it failed"):
        load_modules([broken])
    one, two = tmp_path / "one.py", tmp_path / "two.py"
    one.write_text("EXTERN_FUNCTIONS = {'f': abs}\n")
    two.write_text("EXTERN_FUNCTIONS = {'f': abs}\n")
    with pytest.raises(ExternModuleError, match=r"two\.py: error: .* f is already defined by"):
        load_modules([one, two])


def test_kvfabric_stf_loads_modules(
    tmp_path: Path, module: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = tmp_path / "ext.p4"
    program.write_text(v1model_program(DECLS, INGRESS))
    stf = tmp_path / "ext.stf"
    stf.write_text("packet 0 DEADBEEF C8 64 FB 07\nexpect 1 000000FF FF 64 05 08\n")
    assert main(["stf", str(program), str(stf), "--load-modules", str(module)]) == 0
    assert "PASS" in capsys.readouterr().out
    assert main(["stf", str(program), str(stf)]) == 2
    assert "no implementation is loaded" in capsys.readouterr().err
