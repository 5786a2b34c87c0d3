"""The live page colours each cable by its utilisation, in headless Chromium.

A controller on four real switch processes (no cables, ``--no-audit``: no root) serves
the page; the test reads one real picture from the page's own event stream, sets two
cables' utilisation in it (the lab's switches carry no traffic here), and has the page
draw it: the busier cable must be drawn darker and more purple, and no up cable red.
(The root test takes a real cable down and watches it turn red.)
"""

from __future__ import annotations

import http.client
import json
import re
from pathlib import Path
from typing import Any

from tests.controller_service.harness import RunningSwitches
from tests.operator.browser import chromium
from tests.support.controllers import Controllers

BUSY, IDLE = "leaf1:3-spine1:1", "leaf2:4-spine2:2"


def _picture(host: str, port: int) -> dict[str, Any]:
    """The first ``fabric`` event of /ui/events."""
    conn = http.client.HTTPConnection(host, port, timeout=10)
    try:
        conn.request("GET", "/ui/events")
        response = conn.getresponse()
        assert response.status == 200
        assert response.getheader("Content-Type") == "text/event-stream"
        while True:
            line = response.readline().decode()
            if line.startswith("data: "):
                picture: dict[str, Any] = json.loads(line[len("data: ") :])
                return picture
    finally:
        conn.close()


def _hsl(text: str) -> tuple[float, float, float]:
    m = re.fullmatch(r"hsl\(([\d.]+),([\d.]+)%,([\d.]+)%\)", text)
    assert m is not None, text
    return float(m.group(1)), float(m.group(2)), float(m.group(3))


def test_cables_are_coloured_by_utilisation(
    plain: RunningSwitches, controllers: Controllers, tmp_path: Path, artefacts: Path
) -> None:
    c = controllers.start(plain.path, "--no-audit")
    c.api().wait_ready()
    picture = _picture(c.host, c.port)
    assert {x["link"] for x in picture["cables"]} >= {BUSY, IDLE}
    for cable in picture["cables"]:
        busy = cable["link"] == BUSY
        cable["util_a"], cable["util_b"] = (0.9, 0.4) if busy else (0.05, 0.02)
    with chromium(tmp_path / "profile") as driver:
        driver.get(f"http://{c.host}:{c.port}/ui")
        colours = driver.execute_script(
            "render(arguments[0]); return Object.fromEntries([...document.querySelectorAll("
            "'line.cable')].map(e => [e.dataset.link, e.getAttribute('stroke')]))",
            picture,
        )
        driver.save_screenshot(str(artefacts / "utilisation.png"))
    busy, idle = _hsl(colours[BUSY]), _hsl(colours[IDLE])
    assert busy[0] > idle[0] and busy[2] < idle[2], (busy, idle)  # more purple, darker
    assert busy == (272.0, 79.0, 39.0)  # the page's scale at 90%
    assert "#d32f2f" not in colours.values()
