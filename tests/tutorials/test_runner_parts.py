"""The tutorials runner's parts: PI's message module, the prompt-by-prompt session, the checks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kvfabric.tutorials import p4config_pb2
from kvfabric.tutorials.exercises import EXERCISES, Outcome, by_name
from kvfabric.tutorials.mininet_session import MininetSession, SessionError
from kvfabric.tutorials.runner import Result, table
from softswitch.p4info import pi_config

# A stand-in for Mininet's CLI: a prompt, and a command that, like Mininet's host
# commands, reads stdin while it runs (so a script piped in whole would be eaten).
FAKE_CLI = """\
import select, sys, time
while True:
    sys.stdout.write("mininet> "); sys.stdout.flush()
    line = sys.stdin.readline()
    if line.startswith("hang"):
        try:
            time.sleep(60)
        except KeyboardInterrupt:
            print("Interrupt"); continue
    if not line or line.strip() == "exit":
        print("*** Stopping"); break
    if line.startswith("h1") and select.select([sys.stdin], [], [], 0.5)[0]:
        print("h1 ate", repr(sys.stdin.readline()))  # what Mininet forwards to a host
    print("ran", line.strip())
"""


def test_pi_message_module_round_trips_with_the_switchs_decoder() -> None:
    message = p4config_pb2.P4DeviceConfig(reassign=True, device_data=b'{"a": 1}')
    message.extras.kv["k"] = "v"
    wire = message.SerializeToString()
    decoded = pi_config.decode(wire)
    assert decoded.reassign and decoded.device_data == b'{"a": 1}'
    assert p4config_pb2.P4DeviceConfig.FromString(wire) == message


def test_session_types_one_command_per_prompt(tmp_path: Path) -> None:
    script = tmp_path / "cli.py"
    script.write_text(FAKE_CLI)
    session = MininetSession([sys.executable, "-u", str(script)], tmp_path, {})
    session.read_until_prompt(30)
    out = session.command("h1 ping -c 1 h2", timeout=30)
    assert "ran h1 ping -c 1 h2" in out and "ate" not in out
    assert "ran pingall" in session.command("pingall", timeout=30)
    with pytest.raises(SessionError, match="'hang' did not finish within 1 s"):
        session.command("hang", timeout=1)
    assert "ran nodes" in session.command("nodes", timeout=30)  # back at the prompt
    assert session.exit(30) == 0
    assert session.transcript.decode().endswith("*** Stopping\n")


def test_session_reports_a_cli_that_never_prompts(tmp_path: Path) -> None:
    session = MininetSession([sys.executable, "-c", "print('no prompt')"], tmp_path, {})
    with pytest.raises(SessionError, match="ended"):
        session.read_until_prompt(30)
    session.kill()
    hang = MininetSession([sys.executable, "-c", "import time; time.sleep(60)"], tmp_path, {})
    with pytest.raises(SessionError, match="no Mininet prompt"):
        hang.read_until_prompt(0.5)
    hang.kill()
    assert hang.proc.poll() is not None


def test_every_exercise_of_the_tutorials_has_steps_and_a_check() -> None:
    names = {e.name for e in EXERCISES}
    assert names == {
        "basic", "basic_tunnel", "calc", "ecn", "firewall", "flowcache", "link_monitor",
        "load_balance", "mri", "multicast", "p4runtime", "qos", "source_routing",
    }  # fmt: skip
    for exercise in EXERCISES:
        assert exercise.steps
        for step in exercise.steps:
            step.format(out="/x")  # every placeholder is known


def outcome(tmp_path: Path, transcript: str = "", **files: str) -> Outcome:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return Outcome(transcript, tmp_path)


def test_checks_read_what_the_readmes_promise(tmp_path: Path) -> None:
    ex = by_name()
    assert ex["basic"].check(outcome(tmp_path, "*** Results: 0% dropped (12/12 received)")) == []
    assert (
        "25% dropped"
        in ex["basic"].check(outcome(tmp_path, "*** Results: 25% dropped (9/12 received)"))[0]
    )
    mri = "got a packet\n count = 2\n swid = 2\n qdepth = 0\n swid = 1\n qdepth = 17\n"
    assert ex["mri"].check(outcome(tmp_path, "cli-status=0", **{"h2.txt": mri})) == []
    flat = mri.replace("17", "0")
    got = ex["mri"].check(outcome(tmp_path, "cli-status=0", **{"h2.txt": flat}))
    assert "qdepth was always 0" in got[0]
    assert (
        "simple_switch_CLI"
        in ex["mri"].check(outcome(tmp_path, "cli-status=1", **{"h2.txt": mri}))[0]
    )
    assert ex["ecn"].check(outcome(tmp_path, **{"h2.txt": "tos = 0x1\ntos = 0x3\n"})) == []
    assert ex["ecn"].check(outcome(tmp_path, **{"h2.txt": "tos = 0x1\n"}))
    calc = "mininet> > 1+1\r\n2\r\n> 7-2\r\n5\r\n> 6&3\r\n2\r\n> mininet> "
    assert ex["calc"].check(outcome(tmp_path, calc)) == []
    assert ex["calc"].check(outcome(tmp_path, calc.replace("5", "4"))) == ["7-2 gave 4, expected 5"]


def test_results_table() -> None:
    rows = [Result("basic", True, (), 1.0), Result("ecn", False, ("tos never 0x3",), 2.0)]
    assert table(rows).splitlines()[2:] == [
        "| basic | passes | - |",
        "| ecn | FAILS | tos never 0x3 |",
    ]


def test_the_runner_refuses_a_directory_without_exercises(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kvfabric.tutorials.runner", str(tmp_path)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2
