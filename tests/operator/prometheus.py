"""A real Prometheus server (Debian's ``prometheus``) for tests, started and stopped by pid.

Its own configuration (scrape targets every second, the rules files given, evaluated
every second), its own TSDB in a temporary directory, and an ephemeral port on
127.0.0.1. :meth:`PrometheusProc.query` runs PromQL through the HTTP API.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from tests.support import processes


def free_port() -> int:
    """A port nothing listens on now (Prometheus cannot report a port 0 it bound)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PrometheusProc:
    """``prometheus`` scraping ``targets`` (HOST:PORT) every second."""

    def __init__(self, workdir: Path, targets: list[str], rule_files: list[Path]) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.config = workdir / "prometheus.yml"
        self.config.write_text(
            json.dumps(
                {
                    "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                    "rule_files": [str(p) for p in rule_files],
                    "scrape_configs": [
                        {"job_name": "kvfabric", "static_configs": [{"targets": targets}]}
                    ],
                }
            )
        )
        self.log = workdir / "prometheus.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30.0) -> PrometheusProc:
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                ["prometheus", f"--config.file={self.config}",
                 f"--storage.tsdb.path={self.workdir / 'tsdb'}",
                 f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"prometheus did not start:\n{self.log.read_text()}")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def api(self, path: str, **params: str) -> Any:
        query = urllib.parse.urlencode(params)
        with urllib.request.urlopen(f"{self.url}/api/v1/{path}?{query}", timeout=10) as r:
            body = json.loads(r.read())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query's result vector (or scalar as a one-element list)."""
        data = self.api("query", query=expr)
        if data["resultType"] == "scalar":
            return [{"metric": {}, "value": data["result"]}]
        return list(data["result"])

    def stop(self) -> None:
        if self.proc is not None:
            processes.stop(self.proc)
