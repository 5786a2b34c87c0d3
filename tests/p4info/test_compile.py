"""``kvfabric compile`` end to end, on programs written for these tests.

Each ``programs/X.p4`` has an ``X.expected.txtpb`` written by hand from p4c's
rules; ids appear there as ``{TYPE:name}`` and are filled in with p4c's formula
``prefix << 24 | jenkins(name) & 0xFFFFFF`` (checked against p4c's own outputs
in test_ids.py), so the files say what p4c would print.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from finsy.proto import p4i
from google.protobuf import json_format

from kvfabric.cli import main
from softswitch.errors import RuntimeConfigError
from softswitch.p4info import device_config
from softswitch.p4info.ids import Prefix, jenkins_hash

PROGRAMS = Path(__file__).parent / "programs"


def expected_text(name: str) -> str:
    template = (PROGRAMS / f"{name}.expected.txtpb").read_text()

    def fill(match: re.Match[str]) -> str:
        prefix = Prefix[match.group(1)]
        return str((prefix << 24) | (jenkins_hash(match.group(2)) & 0xFFFFFF))

    return re.sub(r"\{([A-Z_]+):([^}]+)\}", fill, template)


@pytest.mark.parametrize("name", ["features", "nested"])
def test_text_is_what_p4c_prints(name: str, tmp_path: Path) -> None:
    out = tmp_path / f"{name}.p4info.txtpb"
    assert main(["compile", str(PROGRAMS / f"{name}.p4"), "--p4runtime-files", str(out)]) == 0
    assert out.read_text() == expected_text(name)


def test_noaction_carries_only_nowarn(tmp_path: Path) -> None:
    # p4c's core.p4 marks NoAction @noWarn("unused") and nothing else that
    # P4Info shows; no v1model P4Info that p4c writes has a @corelib on it.
    out = tmp_path / "a.bin"
    assert main(["compile", str(PROGRAMS / "features.p4"), "--p4runtime-files", str(out)]) == 0
    info = p4i.P4Info.FromString(out.read_bytes())
    (noaction,) = [a for a in info.actions if a.preamble.name == "NoAction"]
    assert list(noaction.preamble.annotations) == ['@noWarn("unused")']


def test_every_format_and_the_device_config(tmp_path: Path) -> None:
    txt, js, binary, dev = (tmp_path / n for n in ("a.txt", "a.json", "a.bin", "dev.json"))
    program = str(PROGRAMS / "nested.p4")
    spec = f"{txt},{js},{binary}"
    assert main(["compile", program, "--p4runtime-files", spec, "-o", str(dev)]) == 0

    from_text = p4i.P4Info()
    from google.protobuf import text_format

    text_format.Parse(txt.read_text(), from_text)
    from_json = json_format.Parse(js.read_text(), p4i.P4Info())
    from_binary = p4i.P4Info.FromString(binary.read_bytes())
    assert from_text == from_json == from_binary
    assert from_text.tables[0].preamble.name == "MyIngress.i1.t"  # inlined, declared first

    config = device_config.read(dev)
    assert config.file == program
    assert "control MyIngress" in config.program
    assert json.loads(dev.read_text())["format"] == "kvfabric-softswitch/1"
    device_config.check_matches(config, from_binary)
    with pytest.raises(RuntimeConfigError, match="does not belong"):
        device_config.check_matches(config, p4i.P4Info())


def test_device_config_rejects_unknown_keys_and_formats() -> None:
    good = device_config.encode(device_config.DeviceConfig("x", "f.p4", "0" * 64))
    assert device_config.decode(good).program == "x"
    document = json.loads(good)
    document["extra"] = 1
    with pytest.raises(RuntimeConfigError, match="unknown keys: extra") as exc:
        device_config.decode(json.dumps(document).encode())
    assert exc.value.code == "INVALID_ARGUMENT"
    document = json.loads(good)
    document["format"] = "bmv2"
    with pytest.raises(RuntimeConfigError, match="format"):
        device_config.decode(json.dumps(document).encode())
    with pytest.raises(RuntimeConfigError, match="not a JSON"):
        device_config.decode(b"\xff{")


def test_defines_and_include_dirs_reach_the_preprocessor(tmp_path: Path) -> None:
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "size.p4").write_text("#define TABLE_SIZE 77\n")
    source = (PROGRAMS / "nested.p4").read_text()
    source = source.replace("#include <v1model.p4>", '#include <v1model.p4>\n#include "size.p4"')
    source = source.replace("size = 64;", "size = TABLE_SIZE + EXTRA;")
    program = tmp_path / "p.p4"
    program.write_text(source)
    out = tmp_path / "p.txtpb"
    args = ["compile", str(program), "--p4runtime-files", str(out), "-I", str(tmp_path / "inc")]
    assert main([*args, "-D", "EXTRA=3"]) == 0
    assert "  size: 80\n" in out.read_text()


def test_program_error_prints_one_located_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = tmp_path / "bad.p4"
    source = (PROGRAMS / "nested.p4").read_text()
    program.write_text(source.replace("hdr.h.f = 0;", "hdr.h.nothing = 0;"))
    out = tmp_path / "bad.txtpb"
    assert main(["compile", str(program), "--p4runtime-files", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    line = source.splitlines().index("        hdr.h.f = 0;") + 1
    assert err.startswith(f"{program}:{line}:")
    assert ": error: " in err
    assert not out.exists()


def test_conflicting_ids_are_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = (PROGRAMS / "nested.p4").read_text()
    source = source.replace(
        "    action a() {\n        sm.egress_spec",
        "    @id(5) action a() {\n        sm.egress_spec",
    )
    source = source.replace(
        "    action a() {\n        hdr.h.f = 0;", "    @id(5) action a() {\n        hdr.h.f = 0;"
    )
    program = tmp_path / "ids.p4"
    program.write_text(source)
    assert main(["compile", str(program), "--p4runtime-files", str(tmp_path / "o.txt")]) == 1
    assert "@id 16777221 is assigned to multiple declarations" in capsys.readouterr().err


def test_unknown_suffix_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["compile", str(PROGRAMS / "nested.p4"), "--p4runtime-files", "out.yaml"])
    assert exc.value.code == 2
    assert "Could not detect p4runtime info file format from file suffix .yaml" in (
        capsys.readouterr().err
    )


def test_p4c_bm2_ss_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    info, out = tmp_path / "nested.p4.p4info.txtpb", tmp_path / "nested.json"
    program = str(PROGRAMS / "nested.p4")
    argv = ["--p4v", "16", "--p4runtime-files", str(info), "-o", str(out), program]
    assert main(["compile", *argv]) == 0
    assert device_config.read(out).file == program
    assert info.read_text() == expected_text("nested")
    assert capsys.readouterr().err == ""


def test_p4c_driver_command_line_writes_dir_slash_stem_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build = tmp_path / "build"
    info = tmp_path / "n.p4info.txtpb"
    program = str(PROGRAMS / "nested.p4")
    argv = ["--target", "bmv2", "--arch", "v1model", "--p4runtime-files", str(info)]
    assert main(["compile", *argv, "-o", str(build), "--emit-externs", "-g", program]) == 0
    assert device_config.read(build / "nested.json").file == program
    notes = capsys.readouterr().err.splitlines()
    assert notes == [
        "note: --emit-externs ignored: externs are part of the device config",
        "note: -g ignored: the device config carries the source itself",
    ]
    # an existing directory given to -o is a directory without --target as well
    assert main(["compile", "-o", str(build), str(PROGRAMS / "features.p4")]) == 0
    assert (build / "features.json").is_file()


def test_refusals_write_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    info = tmp_path / "x.p4info.txtpb"
    program = str(PROGRAMS / "nested.p4")
    for bad in (["--p4v", "14"], ["--target", "tofino"], ["--arch", "psa"]):
        with pytest.raises(SystemExit) as exc:
            main(["compile", *bad, "--p4runtime-files", str(info), program])
        assert exc.value.code == 2
    missing = tmp_path / "nope" / "out.json"
    assert main(["compile", "--p4runtime-files", str(info), "-o", str(missing), program]) == 1
    assert "No such directory" in capsys.readouterr().err
    assert not info.exists()
