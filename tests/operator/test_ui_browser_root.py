"""The live fabric page (/ui) in Debian's headless Chromium, on a controller driving
four real switch processes joined by veths (root).

The page must show the fabric's switches and cables; a cable the test takes down
(its veth, for real) must turn red within 2 s; a transfer the test requests must
appear with its spine, and completed ones in the latency histogram of their rack pair.
The page must load nothing from anywhere but the controller. Screenshots are kept in
results/test-artefacts/<test>/.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.support.ui import WebDriverWait

from tests.controller_service.harness import Api, RunningSwitches, wait_for
from tests.operator.browser import chromium
from tests.operator.traffic import transfers
from tests.support.controllers import Controllers

pytestmark = pytest.mark.root

LINK = "leaf1:3-spine1:1"
RED = "#d32f2f"


def _status(api: Api, link: str) -> str:
    view: dict[str, Any] = api.call("GET", "/v1/fabric")[1]
    return next(str(x["status"]) for x in view["links"] if x["link"] == link)


def _js(driver: Any, script: str, *args: object) -> Any:
    """Read the page in one script (it redraws on every push: element handles go stale)."""
    return driver.execute_script(script, *args)


def _attrs(driver: Any, selector: str, *names: str) -> list[Any]:
    return list(
        _js(
            driver,
            "return [...document.querySelectorAll(arguments[0])]"
            ".map(e => arguments[1].map(n => e.getAttribute(n)))",
            selector,
            list(names),
        )
    )


def _cable(driver: Any, link: str) -> tuple[str, str] | None:
    found = _attrs(driver, f'line[data-link="{link}"]', "data-status", "stroke")
    return (str(found[0][0]), str(found[0][1])) if found else None


def _text(driver: Any, selector: str) -> Any:
    return _js(
        driver, "const e = document.querySelector(arguments[0]); return e && e.innerText", selector
    )


def test_the_page_shows_the_fabric_live(
    cabled: RunningSwitches, controllers: Controllers, tmp_path: Path, artefacts: Path
) -> None:
    c, api = controllers.ready(cabled.path)
    wait_for(lambda: api.call("GET", "/v1/fabric")[1]["controller"]["audited"])
    with chromium(tmp_path / "profile") as driver:
        wait = WebDriverWait(driver, 10, poll_frequency=0.05)
        driver.get(f"http://{c.host}:{c.port}/ui")
        wait.until(lambda d: len(_attrs(d, "g.switch", "data-switch")) == 4)
        switches = dict(_attrs(driver, "g.switch", "data-switch", "data-state"))
        assert switches == dict.fromkeys(("leaf1", "leaf2", "spine1", "spine2"), "primary")
        cables = dict(_attrs(driver, "line.cable", "data-link", "data-status"))
        assert cables == dict.fromkeys(
            ("leaf1:3-spine1:1", "leaf1:4-spine2:1", "leaf2:3-spine1:2", "leaf2:4-spine2:2"), "up"
        )
        assert _text(driver, "#stream") == "live"
        assert _text(driver, "#mode") == "kv-aware"
        assert _text(driver, "#dp-mode") == "kv-aware"
        driver.save_screenshot(str(artefacts / "1-fabric.png"))

        cabled.set_cable("leaf1", "spine1", up=False)
        downed = time.monotonic()
        WebDriverWait(driver, 2, poll_frequency=0.02).until(
            lambda d: _cable(d, LINK) == ("down", RED)
        )
        red_after = time.monotonic() - downed
        assert red_after < 2.0
        wait.until(lambda d: _text(d, 'tr[data-alert="link_down"]'))
        driver.save_screenshot(str(artefacts / "2-cable-down.png"))

        status, t = api.call("POST", "/v1/transfers", {"src": "h11", "dst": "h21", "bytes": 10**6})
        assert status == 201 and t["spine"] == "spine2", t
        row = wait.until(lambda d: _text(d, f'tr[data-transfer-id="{t["id"]}"]'))
        assert row.split() == [t["id"], "h11", "h21", "1000000", "spine2"]
        transfers(api, 3)
        # two host pairs per rack pair, three rounds: six (the page may show fewer first)
        hist = wait.until(lambda d: _text(d, '.hist[data-pair="leaf1>leaf2"]') or "")
        wait.until(lambda d: "n=6," in (_text(d, '.hist[data-pair="leaf1>leaf2"]') or ""))
        assert "p99" in hist, hist
        driver.save_screenshot(str(artefacts / "3-transfer.png"))

        cabled.set_cable("leaf1", "spine1", up=True)
        wait_for(lambda: _status(api, LINK) == "up", timeout=10)
        wait.until(lambda d: (_cable(d, LINK) or ("",))[0] == "up")
        assert api.call("POST", f"/v1/transfers/{t['id']}/complete", {"duration_s": 0.05})[0] == 200
        wait.until(lambda d: _text(d, f'tr[data-transfer-id="{t["id"]}"]') is None)
        origins = _js(
            driver,
            "return performance.getEntriesByType('resource').map(e => new URL(e.name).origin)",
        )
        assert set(origins) <= {f"http://{c.host}:{c.port}"}, origins
        logs = driver.get_log("browser")  # type: ignore[no-untyped-call]
        assert not [e for e in logs if e["level"] == "SEVERE"], logs
        driver.save_screenshot(str(artefacts / "4-restored.png"))
    print(f"cable down: red on the page after {red_after * 1e3:.0f} ms")


def test_the_page_and_its_stream_need_the_token(
    cabled: RunningSwitches, controllers: Controllers
) -> None:
    c = controllers.start(cabled.path, "--token", "s3cret")
    api = Api(c.host, c.port)
    assert api.call("GET", "/ui")[0] == 401
    assert api.call("GET", "/ui/events?token=wrong")[0] == 401
    status, page = api.call("GET", "/ui?token=s3cret")
    assert status == 200 and "EventSource" in page
    assert api.call("GET", "/v1/fabric?token=s3cret")[0] == 401  # only the page's endpoints
