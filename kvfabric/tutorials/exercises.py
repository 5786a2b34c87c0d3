"""What each p4lang tutorial exercise's README says its solution does, as Mininet steps and checks.

Each :class:`Exercise` lists the Mininet CLI commands a student types after
``make run`` (receivers in the background with their output in ``{out}``,
senders in the foreground), and a check that reads the transcript and those
files and returns what did not happen as the README says (empty: it behaves).
Commands are what the READMEs show, with changes that keep them scriptable:
an interactive program's input comes from ``printf |``; a program that runs
forever is started with ``&`` and stopped with ``kill %python3`` in its
host's shell; and Mininet's ``iperf hA hB`` is spelt as ``hB iperf -s &`` and
``hA iperf -c``, because Mininet 2.3's ``iperf`` command waits forever for
output that iperf 2.1 no longer prints.  Nothing here copies the tutorials' code;
the commands run the tutorials' own scripts.

Placeholders: ``{out}`` is the directory for the hosts' output files.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a run left: the Mininet transcript and the output files."""

    transcript: str
    out: Path

    def file(self, name: str) -> str:
        path = self.out / name
        return path.read_text(errors="replace") if path.exists() else ""


Check = Callable[[Outcome], list[str]]


@dataclass(frozen=True, slots=True)
class Exercise:
    """One exercise: its solution files, what to type, and the README's expectations."""

    name: str
    steps: tuple[str, ...]
    check: Check
    # solution file -> where it goes in the exercise directory (default: same name)
    solution_targets: dict[str, str] = field(default_factory=dict)


def _receive(host: str, script: str = "receive.py") -> str:
    return f"{host} python3 -u {script} > {{out}}/{host}.txt 2>&1 &"


def _stop(host: str) -> str:
    return f"{host} kill %python3"


def _count(text: str, needle: str) -> int:
    return text.count(needle)


def _tos_values(text: str) -> list[int]:
    return [int(v, 16) for v in re.findall(r"\btos\s*=\s*(0x[0-9a-fA-F]+)", text)]


def _check_basic(o: Outcome) -> list[str]:
    if "Results: 0% dropped" not in o.transcript:
        found = re.findall(r"Results: \d+% dropped \(\d+/\d+ received\)", o.transcript)
        return [f"pingall: {found[-1] if found else 'no result'}; the README expects no loss"]
    return []


def _check_basic_tunnel(o: Outcome) -> list[str]:
    h2 = o.file("h2.txt")
    problems = []
    if _count(h2, "got a packet") < 3:
        problems.append(f"h2 received {_count(h2, 'got a packet')} of the 3 messages")
    if _count(h2, "MyTunnel") < 2:
        problems.append(f"h2 saw the tunnel header {_count(h2, 'MyTunnel')} times, expected 2")
    if _count(h2, "P4 is cool") < 3:
        problems.append("the payload 'P4 is cool' did not arrive 3 times")
    return problems


def _check_calc(o: Outcome) -> list[str]:
    # printf feeds "1+1", "7-2", "6&3"; calc.py prompts "> " (no newline: stdin is a pipe),
    # echoes each line, then prints the result
    results = re.findall(r"(?:^|> )(1\+1|7-2|6&3)\r?\n(\S+)", o.transcript, flags=re.M)
    got = dict(results)
    expected = {"1+1": "2", "7-2": "5", "6&3": "2"}
    return [f"{q} gave {got.get(q, 'nothing')}, expected {a}" for q, a in expected.items()
            if got.get(q) != a]  # fmt: skip


def _check_ecn(o: Outcome) -> list[str]:
    tos = _tos_values(o.file("h2.txt"))
    if not tos:
        return ["h2 received no packets"]
    if 0x3 not in tos:
        return [f"tos never became 0x3 (values seen: {sorted(set(tos))}); README: 1 -> 3"]
    return []


def _bandwidth(text: str) -> bool:
    return bool(re.search(r"\d+(\.\d+)? [KMG]?bits/sec", text))


def _check_firewall(o: Outcome) -> list[str]:
    problems = []
    if not _bandwidth(o.file("h1-h2.txt")):
        problems.append("iperf h1 -> h2 (internal) did not run")
    if not _bandwidth(o.file("h1-h3.txt")):
        problems.append("iperf h1 -> h3 (inside to outside) did not run")
    if _bandwidth(o.file("h3-h1.txt")):
        problems.append("iperf h3 -> h1 (outside to inside) was not blocked")
    return problems


def _ping_received(text: str) -> int:
    found = re.findall(r"(\d+) packets transmitted, (\d+) received", text)
    return int(found[-1][1]) if found else 0


def _check_controller_ping(counter_pattern: str) -> Check:
    def check(o: Outcome) -> list[str]:
        problems = []
        if _ping_received(o.file("ping.txt")) == 0:
            problems.append("h1 got no ping replies from h2 once the controller ran")
        controller = o.file("controller.txt")
        if counter_pattern and not re.search(counter_pattern, controller):
            problems.append(f"the controller's output never showed {counter_pattern!r}")
        if "Traceback" in controller:
            problems.append("the controller failed: " + controller.strip().splitlines()[-1])
        return problems

    return check


def _check_link_monitor(o: Outcome) -> list[str]:
    rates = [float(v) for v in re.findall(r"Port \d+: ([\d.]+) Mbps", o.file("h1.txt"))]
    if not rates:
        return ["h1 received no probes with link utilisation"]
    if max(rates) <= 0:
        return ["every link utilisation reported was 0 during iperf"]
    return []


def _check_load_balance(o: Outcome) -> list[str]:
    h2, h3 = _count(o.file("h2.txt"), "got a packet"), _count(o.file("h3.txt"), "got a packet")
    if h2 + h3 < 8:
        return [f"only {h2 + h3} of 8 messages arrived (h2 {h2}, h3 {h3})"]
    if not h2 or not h3:
        return [f"one server got everything (h2 {h2}, h3 {h3}); README: some to each"]
    return []


def _check_mri(o: Outcome) -> list[str]:
    h2 = o.file("h2.txt")
    if "got a packet" not in h2:
        return ["h2 received no packets"]
    counts = {int(c) for c in re.findall(r"\bcount\s*=\s*(\d+)", h2)}
    depths = [int(d) for d in re.findall(r"\bqdepth\s*=\s*(\d+)", h2)]
    problems = []
    if "cli-status=0" not in o.transcript:
        problems.append("simple_switch_CLI set_queue_rate/set_queue_depth failed: "
                        + o.file("cli.txt").strip()[-200:])  # fmt: skip
    if 2 not in counts:
        problems.append(f"MRI count was {sorted(counts)}, expected 2 (two switches)")
    if not depths or max(depths) == 0:
        problems.append("qdepth was always 0; README: high at s1 while iperf runs")
    return problems


def _check_qos(o: Outcome) -> list[str]:
    tos = set(_tos_values(o.file("h2.txt")))
    return [f"tos {want:#x} ({proto}) never seen; seen {sorted(hex(t) for t in tos)}"
            for want, proto in ((0xB9, "UDP"), (0xB1, "TCP")) if want not in tos]  # fmt: skip


def _check_source_routing(o: Outcome) -> list[str]:
    h2 = o.file("h2.txt")
    if "got a packet" not in h2:
        return ["h2 received nothing sent along the route 2 3 2 2 1"]
    return []


_CONTROLLER = "sh python3 -u mycontroller.py > {out}/controller.txt 2>&1 & echo $! > {out}/pid"
_STOP_CONTROLLER = "sh kill $(cat {out}/pid)"

# ecn's and mri's run: h1 sends 30 probes to h2 while h11 loads the h11-h22 UDP path.
_PROBES_UNDER_UDP_LOAD: tuple[str, ...] = (
    _receive("h2"),
    "h22 iperf -s -u > {out}/h22.txt 2>&1 &",
    "sh sleep 3",
    'h1 python3 send.py 10.0.2.2 "P4 is cool" 30 > {out}/h1.txt 2>&1 &',
    "h11 iperf -c 10.0.2.22 -t 15 -u",
    "sh sleep 5",
    _stop("h2"),
    "h22 kill %iperf",
    "h1 kill %python3",
)

EXERCISES: tuple[Exercise, ...] = (
    Exercise("basic", ("pingall",), _check_basic),
    Exercise(
        "basic_tunnel",
        (
            _receive("h2"),
            "sh sleep 3",
            'h1 python3 send.py 10.0.2.2 "P4 is cool"',
            'h1 python3 send.py 10.0.2.2 "P4 is cool" --dst_id 2',
            'h1 python3 send.py 10.0.3.3 "P4 is cool" --dst_id 2',
            "sh sleep 2",
            _stop("h2"),
        ),
        _check_basic_tunnel,
    ),
    Exercise(
        "calc",
        ("h1 sh -c 'printf \"1+1\\n7-2\\n6&3\\nquit\\n\" | python3 calc.py'",),
        _check_calc,
    ),
    Exercise(
        "ecn",
        _PROBES_UNDER_UDP_LOAD,
        _check_ecn,
    ),
    Exercise(
        "firewall",
        (
            "h1 iperf -s > /dev/null 2>&1 &",
            "h2 iperf -s > /dev/null 2>&1 &",
            "h3 iperf -s > /dev/null 2>&1 &",
            "sh sleep 2",
            "h1 timeout 20 iperf -c 10.0.2.2 -t 2 > {out}/h1-h2.txt 2>&1",
            "h1 timeout 20 iperf -c 10.0.3.3 -t 2 > {out}/h1-h3.txt 2>&1",
            "h3 timeout 20 iperf -c 10.0.1.1 -t 2 > {out}/h3-h1.txt 2>&1",
            "h1 kill %iperf",
            "h2 kill %iperf",
            "h3 kill %iperf",
        ),
        _check_firewall,
    ),
    Exercise(
        "flowcache",
        (
            _CONTROLLER,
            "sh sleep 8",
            "h1 ping -c 5 10.0.2.2 > {out}/ping.txt 2>&1",
            _STOP_CONTROLLER,
        ),
        _check_controller_ping(""),
    ),
    Exercise(
        "link_monitor",
        (
            _receive("h1"),
            "h1 python3 send.py > {out}/h1-send.txt 2>&1 &",
            "h4 iperf -s > /dev/null 2>&1 &",
            "sh sleep 2",
            "h1 timeout 30 iperf -c 10.0.4.4 -t 5 > {out}/iperf.txt 2>&1",
            "sh sleep 2",
            "h1 kill %python3",
            "h1 kill %python3",
            "h4 kill %iperf",
        ),
        _check_link_monitor,
    ),
    Exercise(
        "load_balance",
        (
            _receive("h2"),
            _receive("h3"),
            "sh sleep 3",
            *(['h1 python3 send.py 10.0.0.1 "P4 is cool"'] * 8),
            "sh sleep 2",
            _stop("h2"),
            _stop("h3"),
        ),
        _check_load_balance,
    ),
    Exercise(
        "mri",
        (
            # the README's "food for thought": s1's queues through simple_switch_CLI
            "sh printf 'set_queue_rate 50\\nset_queue_depth 100\\n' | "
            "simple_switch_CLI --thrift-port 9090 > {out}/cli.txt 2>&1; echo cli-status=$?",
            *_PROBES_UNDER_UDP_LOAD,
        ),
        _check_mri,
    ),
    Exercise(
        "multicast",
        ("pingall",),
        _check_basic,
        solution_targets={"s1-runtime.json": "sig-topo/s1-runtime.json"},
    ),
    Exercise(
        "p4runtime",
        (
            _CONTROLLER,
            "sh sleep 8",
            "h1 ping -c 5 10.0.2.2 > {out}/ping.txt 2>&1",
            "sh sleep 3",
            _STOP_CONTROLLER,
        ),
        _check_controller_ping(r"ingressTunnelCounter \d+: [1-9]\d* packets"),
    ),
    Exercise(
        "qos",
        (
            _receive("h2"),
            "sh sleep 3",
            'h1 python3 send.py --p=UDP --des=10.0.2.2 --m="P4 is cool" --dur=3',
            'h1 python3 send.py --p=TCP --des=10.0.2.2 --m="P4 is cool" --dur=3',
            "sh sleep 2",
            _stop("h2"),
        ),
        _check_qos,
    ),
    Exercise(
        "source_routing",
        (
            _receive("h2"),
            "sh sleep 3",
            "h1 sh -c 'printf \"2 3 2 2 1\\nq\\n\" | python3 send.py 10.0.2.2'",
            "sh sleep 2",
            _stop("h2"),
        ),
        _check_source_routing,
    ),
)


def by_name() -> dict[str, Exercise]:
    """The exercises by directory name."""
    return {e.name: e for e in EXERCISES}
