"""Links going down under a running switch: quietly, and back up where they can (root).

A link set down and up again keeps its port (the same socket receives again); an
interface that is removed, as every Mininet teardown removes its veths, ends its
port with one line in the log and no traceback.
"""

from __future__ import annotations

import subprocess
import time

import pytest

from softswitch.switch.process import SwitchProcess
from tests.support.netns import namespace, veths

from .netns import NsPort
from .test_queues import is_probe, receive, send_burst, switch_argv

pytestmark = pytest.mark.root


def _wait_for(text: str, process: SwitchProcess, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while text not in process.stderr_text():
        assert time.monotonic() < deadline, process.stderr_text()
        time.sleep(0.05)


def test_link_down_up_and_removal_end_quietly() -> None:
    with namespace() as ns, veths(ns, 3) as pairs:
        argv = switch_argv(pairs, "--log-console", "-L", "info")
        with SwitchProcess(argv) as process:
            h1, h2 = NsPort(ns, pairs[0].inside), NsPort(ns, pairs[1].inside)
            try:
                send_burst(h1, 0, 3)
                assert len(receive(h2, 3)) == 3

                for state in ("down", "up"):
                    subprocess.run(["ip", "link", "set", pairs[0].outside, state], check=True)
                _wait_for(f"port 1 ({pairs[0].outside}): link down", process)
                time.sleep(0.2)
                send_burst(h1, 10, 3)
                assert [p.seq for p in receive(h2, 3)] == [10, 11, 12]

                subprocess.run(["ip", "link", "del", pairs[2].outside], check=True)
                _wait_for(f"port 3 ({pairs[2].outside}): interface removed", process)
                send_burst(h1, 20, 3)  # the other ports keep working
                assert [p.seq for p in receive(h2, 3)] == [20, 21, 22]
                assert not h1.sniff(0.2, is_probe)
            finally:
                h1.close()
                h2.close()
            assert process.stop() == 0
            log = process.stderr_text()
    assert "Traceback" not in log, log
    assert "Network is down" not in log, log
