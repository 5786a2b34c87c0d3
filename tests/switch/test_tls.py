"""``--grpc-server-ssl`` and ``--grpc-server-with-client-auth`` on a ``kvfabric switch`` process.

The certificates are made here with the openssl command line: a test CA, a
server certificate for 127.0.0.1 signed by it, a client certificate signed by
it, and a second CA with a client certificate of its own that the switch must
refuse.  Each case starts a real switch process (``--no-p4``) and connects with
grpc's TLS channel credentials, as a controller would.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from finsy.proto import p4r, p4r_grpc

from softswitch.switch.process import LaunchError, SwitchProcess
from tests.support.p4rt_client import StreamClient

from .harness import fabric

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl command")
EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


def openssl(cwd: Path, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_ca(cwd: Path, name: str) -> None:
    openssl(cwd, "req", "-x509", *EC, "-keyout", f"{name}.key", "-out", f"{name}.pem",
            "-days", "2", "-subj", f"/CN=kvfabric test {name}")  # fmt: skip


def make_cert(cwd: Path, ca: str, name: str, san: str | None = None) -> None:
    openssl(cwd, "req", *EC, "-keyout", f"{name}.key", "-out", f"{name}.csr",
            "-subj", f"/CN=kvfabric {name}")  # fmt: skip
    extra: list[str] = []
    if san is not None:
        (cwd / f"{name}.ext").write_text(f"subjectAltName={san}\n")
        extra = ["-extfile", f"{name}.ext"]
    openssl(cwd, "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
            "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", *extra)  # fmt: skip


@dataclass
class Pki:
    dir: Path

    def read(self, name: str) -> bytes:
        return (self.dir / name).read_bytes()

    def path(self, name: str) -> str:
        return str(self.dir / name)

    def credentials(self, client: str | None = None) -> grpc.ChannelCredentials:
        if client is None:
            return grpc.ssl_channel_credentials(root_certificates=self.read("ca.pem"))
        return grpc.ssl_channel_credentials(
            root_certificates=self.read("ca.pem"),
            private_key=self.read(f"{client}.key"),
            certificate_chain=self.read(f"{client}.pem"),
        )


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    cwd = tmp_path_factory.mktemp("pki")
    make_ca(cwd, "ca")
    make_ca(cwd, "rogue")
    make_cert(cwd, "ca", "server", san="IP:127.0.0.1,DNS:localhost")
    make_cert(cwd, "ca", "client")
    make_cert(cwd, "rogue", "intruder")
    return Pki(cwd)


def tls_switch(pki: Pki, *extra: str) -> SwitchProcess:
    return SwitchProcess(
        ["--no-p4", "--", "--grpc-server-addr", "127.0.0.1:0", "--grpc-server-ssl",
         "--grpc-server-cert", pki.path("server.pem"), "--grpc-server-key",
         pki.path("server.key"), *extra]
    )  # fmt: skip


def capabilities(channel: grpc.Channel) -> str:
    reply = p4r_grpc.P4RuntimeStub(channel).Capabilities(p4r.CapabilitiesRequest(), timeout=5)
    return str(reply.p4runtime_api_version)


@pytest.fixture(scope="module")
def server_tls(pki: Pki) -> Iterator[SwitchProcess]:
    with tls_switch(pki) as process:
        yield process


@pytest.fixture(scope="module")
def mutual_tls(pki: Pki) -> Iterator[SwitchProcess]:
    with tls_switch(
        pki, "--grpc-server-cacert", pki.path("ca.pem"), "--grpc-server-with-client-auth"
    ) as process:
        yield process


def test_tls_clients_get_a_full_session(pki: Pki, server_tls: SwitchProcess) -> None:
    with grpc.secure_channel(server_tls.address, pki.credentials()) as channel:
        assert capabilities(channel)
    with StreamClient(server_tls.address, credentials=pki.credentials()) as client:
        client.become_primary(1)
        info, config = fabric()
        client.set_pipeline(info, config)
        default = p4r.TableEntry(table_id=info.tables[0].preamble.id, is_default_action=True)
        [entity] = client.read(p4r.Entity(table_entry=default))
        assert entity.table_entry.is_default_action


def test_plaintext_and_untrusted_servers_are_refused(pki: Pki, server_tls: SwitchProcess) -> None:
    with grpc.insecure_channel(server_tls.address) as channel, pytest.raises(grpc.RpcError) as exc:
        capabilities(channel)
    assert exc.value.code() == grpc.StatusCode.UNAVAILABLE
    # a client that trusts another CA does not accept the switch's certificate
    wrong_ca = grpc.ssl_channel_credentials(root_certificates=pki.read("rogue.pem"))
    with (
        grpc.secure_channel(server_tls.address, wrong_ca) as channel,
        pytest.raises(grpc.RpcError) as exc,
    ):
        capabilities(channel)
    assert exc.value.code() == grpc.StatusCode.UNAVAILABLE


def test_client_auth_admits_only_certificates_of_the_ca(
    pki: Pki, mutual_tls: SwitchProcess
) -> None:
    with grpc.secure_channel(mutual_tls.address, pki.credentials("client")) as channel:
        assert capabilities(channel)
    for credentials in (pki.credentials(), pki.credentials("intruder")):
        with (
            grpc.secure_channel(mutual_tls.address, credentials) as channel,
            pytest.raises(grpc.RpcError) as exc,
        ):
            capabilities(channel)
        assert exc.value.code() == grpc.StatusCode.UNAVAILABLE


def test_cacert_without_client_auth_does_not_require_a_client_certificate(pki: Pki) -> None:
    with tls_switch(pki, "--grpc-server-cacert", pki.path("ca.pem")) as process:
        for credentials in (pki.credentials(), pki.credentials("client")):
            with grpc.secure_channel(process.address, credentials) as channel:
                assert capabilities(channel)


def test_missing_key_file_is_a_clear_start_error(pki: Pki, tmp_path: Path) -> None:
    process = SwitchProcess(
        ["--no-p4", "--", "--grpc-server-addr", "127.0.0.1:0", "--grpc-server-ssl",
         "--grpc-server-cert", pki.path("server.pem"), "--grpc-server-key",
         str(tmp_path / "missing.key")]
    )  # fmt: skip
    try:
        with pytest.raises(LaunchError) as exc:
            process.start()
        assert "exited with status 1" in str(exc.value)
        assert "missing.key" in str(exc.value)
        assert "Traceback" not in str(exc.value)
    finally:
        process.close()
