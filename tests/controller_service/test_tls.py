"""P4Runtime over TLS: switches serving with a certificate, the controller checking it."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.controller_service.harness import RunningSwitches
from tests.support.controllers import Controllers


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("certs")
    _openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=kvfabric test CA",
        "-keyout",
        str(d / "ca.key"),
        "-out",
        str(d / "ca.pem"),
    )
    _openssl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=127.0.0.1",
        "-keyout",
        str(d / "switch.key"),
        "-out",
        str(d / "switch.csr"),
    )
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    _openssl("x509", "-req", "-in", str(d / "switch.csr"), "-CA", str(d / "ca.pem"),
             "-CAkey", str(d / "ca.key"), "-CAcreateserial", "-days", "1",
             "-extfile", str(d / "san.ext"), "-out", str(d / "switch.pem"))  # fmt: skip
    return d


@pytest.fixture(scope="module")
def tls_fabric(tmp_path_factory: pytest.TempPathFactory, certs: Path) -> Iterator[RunningSwitches]:
    tls = ("--grpc-server-ssl", "--grpc-server-cacert", str(certs / "ca.pem"),
           "--grpc-server-cert", str(certs / "switch.pem"),
           "--grpc-server-key", str(certs / "switch.key"))  # fmt: skip
    f = RunningSwitches(tmp_path_factory.mktemp("tls"), target_args=tls)
    try:
        yield f.start()
    finally:
        f.close()


def test_the_controller_provisions_switches_over_tls(
    tls_fabric: RunningSwitches, controllers: Controllers, certs: Path
) -> None:
    c = controllers.start(tls_fabric.path, "--no-audit", "--tls-ca", str(certs / "ca.pem"))
    api = c.api()
    view = api.wait_ready()
    assert view["controller"]["role"] == "primary"
    status, t = api.call("POST", "/v1/transfers", {"src": "h11", "dst": "h22", "bytes": 1000})
    assert status == 201 and t["placement"] == "pinned"


def test_without_the_ca_the_controller_does_not_connect(
    tls_fabric: RunningSwitches, controllers: Controllers
) -> None:
    import time

    c = controllers.start(tls_fabric.path, "--no-audit")
    time.sleep(2.0)
    status, view = c.api().call("GET", "/v1/fabric")
    assert status == 200 and view["controller"]["ready"] is False
    assert not any(s["up"] for s in view["controller"]["switches"].values())
    status, refused = c.api().call(
        "POST", "/v1/transfers", {"src": "h11", "dst": "h22", "bytes": 1}
    )
    assert status == 503 and "not provisioned" in refused["error"]
