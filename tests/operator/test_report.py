"""``kvfabric report`` on the log of a real controller, rendered in headless Chromium.

The controller drives four real switch processes (no cables: ``--no-audit``, so no
root); the test makes traffic on every rack pair, one transfer in ECMP mode and a slow
one (an outlier, and a p99 alert when its 2 s window closes), so that every section of
the report has something to draw. A copy of the log with bad lines appended must give a
report that counts them by reason, on standard error and in the report, with no
traceback. The report is opened in Chromium and kept as a PNG in
results/test-artefacts/<test>/.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
from pathlib import Path

from tests.controller_service.harness import RunningSwitches, wait_for
from tests.operator.browser import chromium
from tests.operator.traffic import ecmp_interlude, transfers
from tests.support.controllers import Controllers

BAD_LINES = [
    "this is not JSON",
    "[1, 2, 3]",
    '{"time_wall": 1800000000}',
    '{"event": "transfer", "time_wall": 1800000000, "src": "h11", "dst": "h21"}',
]
OLD = '{"event": "mode", "time_wall": 1000000000, "mode": "ecmp", "reason": "long ago"}'


def _events(log: Path) -> list[str]:
    return [json.loads(line)["event"] for line in log.read_text().splitlines() if line]


def test_the_report_of_a_real_controller_log(
    plain: RunningSwitches, controllers: Controllers, tmp_path: Path, artefacts: Path
) -> None:
    log = tmp_path / "transfers.jsonl"
    c, api = controllers.ready(plain.path, "--no-audit", "--log", str(log))
    transfers(api, 5)
    ecmp_interlude(api)
    transfers(api, 3)
    status, slow = api.call("POST", "/v1/transfers", {"src": "h12", "dst": "h21", "bytes": 9})
    assert status == 201
    api.call("POST", f"/v1/transfers/{slow['id']}/complete", {"duration_s": 0.6})
    transfers(api, 2)
    wait_for(lambda: _events(log).count("tiers") >= 2, timeout=30, step=0.5)
    c.stop()
    events = set(_events(log))
    assert {"transfer", "efficiency", "mode", "alert", "tiers"} <= events, events

    with_bad = tmp_path / "with-bad-lines.jsonl"
    with_bad.write_text(log.read_text() + "\n".join([*BAD_LINES, OLD]) + "\n")
    out = artefacts / "report.html"
    result = subprocess.run(
        [sys.executable, "-m", "kvfabric.cli", "report", str(with_bad), "--out", str(out)],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    lines = len(log.read_text().splitlines())
    for reason, where in (("not JSON", lines + 1), ("not a JSON object", lines + 2),
                          ("no 'event'", lines + 3),
                          ("transfer without a positive 'duration_s'", lines + 4)):  # fmt: skip
        assert f"skipped 1 line(s): {reason} (first at {with_bad}:{where})" in result.stderr
    page = out.read_text()
    assert "<script" not in page and "http://" not in page and "https://" not in page
    for heading in ("Summary", "p50 / p95 / p99", "baseline and outliers",
                    "Scheduling efficiency", "Reroutes and fallbacks", "Per-tier utilisation",
                    "Alerts", "Skipped"):  # fmt: skip
        assert heading in page, heading
    assert page.count('src="data:image/png;base64,') >= 6
    assert "<td>lines skipped</td><td>4</td>" in page
    assert "<td>records before --since</td><td>1</td>" in page
    assert "latency_p99" in page and "leaf1&gt;leaf2" in page

    with chromium(tmp_path / "profile", width=1200, height=900) as driver:
        driver.get(out.as_uri())
        assert driver.execute_script(
            "return [...document.images].every(i => i.complete && i.naturalWidth > 0)"
        )
        height = driver.execute_script("return document.body.scrollHeight")
        driver.set_window_size(1200, min(int(height) + 100, 12000))
        time.sleep(0.2)
        png = driver.get_screenshot_as_base64()
    shot = artefacts / "report.png"
    shot.write_bytes(base64.b64decode(png))
    assert shot.stat().st_size > 50_000


def test_a_missing_log_or_bad_since_is_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    run = [sys.executable, "-m", "kvfabric.cli", "report"]
    result = subprocess.run([*run, str(missing)], capture_output=True, text=True, check=False)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert str(missing) in result.stderr
    missing.write_text("")
    result = subprocess.run([*run, str(missing), "--since", "a week"], capture_output=True,
                            text=True, check=False)  # fmt: skip
    assert result.returncode == 2 and "--since 'a week'" in result.stderr
    result = subprocess.run(
        [*run, str(missing), "--out", str(tmp_path / "r.html")], capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "no completed transfer" in (tmp_path / "r.html").read_text()
