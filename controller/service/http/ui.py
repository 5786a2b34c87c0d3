"""The live fabric page: ``GET /ui`` (one HTML file) and ``GET /ui/events`` (its data).

The page is ``ui_page.html`` next to this module: plain HTML, CSS and JavaScript
with no external asset (no CDN, no font, no library), so it works on a fabric with
no internet. It draws the spines, the leaves and their cables as SVG and fills them
from a server-sent event stream: each event is one JSON picture of the fabric,
:func:`ui_state`, built from the engine's snapshot and the service at that instant.

The stream sends a picture at once, then another every :data:`PUSH_S` whenever it
changed (a comment every :data:`KEEPALIVE_S` otherwise), so the page is at most one
push period plus a telemetry poll behind the controller. The browser's
``EventSource`` reconnects by itself if the controller restarts.

A picture holds, all JSON-ready:

- ``switches``: each switch's role (leaf or spine) and its state for this controller
  (``primary``, ``backup``, ``down``...);
- ``cables``: each leaf-spine cable's audit status and its utilisation both ways
  (the smoothed utilisation of the egress port at either end);
- ``mode`` and ``effective_mode`` (the engine's), ``data_plane_mode`` (what the
  leaves were last told), ``fallback_active``;
- ``transfers``: the transfers in flight with their spine (null on ECMP) and, for a
  transfer split over spines, its slices (spine and bytes each), and the
  ``flow_pins`` (also as ``static_pins``, their old name, deprecated for one release);
- ``alerts``: the alerts firing now;
- ``latency``: per rack pair (source leaf > destination leaf), a histogram of the
  durations of the last completed transfers in the log (:data:`LATENCY_EDGES_S`).

With a bearer token configured the page and the stream need it too; a browser
cannot set the header on an ``EventSource``, so both also take ``?token=``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

from controller.config import Role
from controller.engine.telemetry_math import percentile
from controller.service.http.server import finite

if TYPE_CHECKING:
    from controller.service.service import Service

PAGE = Path(__file__).with_name("ui_page.html")
PUSH_S = 0.25
KEEPALIVE_S = 10.0
LATENCY_EDGES_S = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0)
"""Upper edges of the latency histogram's bins (one more bin for anything slower)."""
RECENT = 200
"""How many of the last completed transfers per rack pair the histogram counts."""


def page() -> bytes:
    """The page's HTML (read once per request: it is small, and editable in place)."""
    return PAGE.read_bytes()


def ui_state(service: Service) -> dict[str, object]:
    """The picture of the fabric the page draws (see the module docstring)."""
    s = service.engine.snapshot(service.clock())
    topo = s.topology
    states = service.switches.states()
    util = {str(p.ref): p.util if p.sampled else None for p in s.ports}
    cables = []
    for link in topo.links:
        cables.append(
            {
                "link": str(link),
                "a": link.a.switch,
                "b": link.b.switch,
                "status": str(topo.link_status(link)),
                "util_a": util.get(str(link.a)),
                "util_b": util.get(str(link.b)),
            }
        )
    switches = [
        {
            "name": sw.name,
            "role": "leaf" if sw.role is Role.LEAF else "spine",
            "state": str(states[sw.name]),
            "hosts": sorted(h.name for h in topo.hosts.values() if h.leaf == sw.name),
        }
        for sw in topo.config.switches
    ]
    transfers = [
        {
            "id": service.api_id(t.id),
            "src": t.decision.src,
            "dst": t.decision.dst,
            "bytes": t.decision.bytes,
            "spine": t.path.spine if t.path is not None else None,
            "slices": [{"spine": sl.path.spine, "bytes": sl.bytes} for sl in t.decision.slices],
            "pair": f"{t.pair[0]}>{t.pair[1]}",
        }
        for t in s.transfers
    ]
    transfers += [
        {"id": a.pin.meta.id, "src": a.pin.meta.src, "dst": a.pin.meta.dst,
         "bytes": a.size, "spine": a.pin.meta.spine,
         "slices": [{"spine": p.meta.spine, "bytes": p.meta.size} for p in a.pins],
         "pair": None}
        for a in service.adoptions.by_id.values()
    ]  # fmt: skip
    flow_pins = [p.as_dict() for p in s.flow_pins]
    return {
        "fabric": topo.config.name,
        "instance": service.instance,
        "role": service.switches.role,
        "mode": str(s.mode),
        "effective_mode": str(s.effective_mode),
        "data_plane_mode": str(service.enforcer.mode),
        "fallback_active": s.fallback_active,
        "switches": switches,
        "cables": cables,
        "tiers": {str(t): {"mean": v.mean, "p95": v.p95} for t, v in s.tiers().items()},
        "transfers": transfers,
        "flow_pins": flow_pins,
        "static_pins": flow_pins,  # deprecated: the old name of flow_pins, for one release
        "alerts": [
            {"name": a.name, "subject": a.subject, "message": a.message, "severity": a.severity}
            for a in s.alerts
        ],
        "latency": latency_histograms(service),
        "latency_edges_s": list(LATENCY_EDGES_S),
    }


def latency_histograms(service: Service) -> dict[str, dict[str, object]]:
    """Per rack pair, the last completed transfers' durations binned by
    :data:`LATENCY_EDGES_S`, with their count and p50/p99."""
    hosts = service.engine.topology.hosts
    by_pair: dict[str, list[float]] = {}
    for record in service.translog.recent:
        duration = record.get("duration_s")
        if record.get("event") != "transfer" or not isinstance(duration, int | float):
            continue
        src, dst = hosts.get(str(record.get("src"))), hosts.get(str(record.get("dst")))
        if src is None or dst is None:
            continue
        by_pair.setdefault(f"{src.leaf}>{dst.leaf}", []).append(float(duration))
    out: dict[str, dict[str, object]] = {}
    for pair, durations in sorted(by_pair.items()):
        recent = durations[-RECENT:]
        bins = [0] * (len(LATENCY_EDGES_S) + 1)
        for d in recent:
            bins[next((i for i, e in enumerate(LATENCY_EDGES_S) if d <= e), -1)] += 1
        out[pair] = {
            "count": len(recent),
            "bins": bins,
            "p50_s": percentile(recent, 50),
            "p99_s": percentile(recent, 99),
        }
    return out


async def events(service: Service) -> AsyncIterator[bytes]:
    """The page's server-sent events: a picture now, then each change (see the module
    docstring). Ends when the client goes away (the server stops iterating)."""
    yield b"retry: 1000\n\n"
    last = ""
    quiet = 0.0
    while True:
        text = json.dumps(finite(ui_state(service)), separators=(",", ":"), allow_nan=False)
        if text != last:
            last, quiet = text, 0.0
            yield f"event: fabric\ndata: {text}\n\n".encode()
        elif quiet >= KEEPALIVE_S:
            quiet = 0.0
            yield b": keep-alive\n\n"
        await asyncio.sleep(PUSH_S)
        quiet += PUSH_S
