"""Real servers for remote sources, on 127.0.0.1: moto's S3 server (boto3 speaks to it as to AWS),
a fixture website (``pytest-httpserver``) and git repositories made in the test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragloom import Index
from ragloom.config import Config


@pytest.fixture(scope="session")
def moto_server() -> Iterator[str]:
    """moto's S3 server in server mode (the real S3 wire protocol) on a free port; its endpoint."""
    pytest.importorskip("boto3")
    moto = pytest.importorskip("moto.server")
    server = moto.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def s3(moto_server: str, monkeypatch: pytest.MonkeyPatch):
    """A boto3 client of the moto server, with the standard AWS variables set for ragloom to find."""
    import boto3

    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_server)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing-secret-key")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    for name in ("AWS_ENDPOINT_URL_S3", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    client = boto3.client("s3")
    yield client
    client.close()


def open_index(path: Path, embedder, **sources) -> Index:
    config = Config.from_dict({"index": str(path), "sources": {"allow_private_hosts": True, **sources}})
    return Index.open(path, config, embedder=embedder)


@pytest.fixture
def index_at(tmp_path: Path, embedder):
    opened: list[Index] = []

    def make(name: str = "index", **sources) -> Index:
        index = open_index(tmp_path / name, embedder, **sources)
        opened.append(index)
        return index

    yield make
    for index in opened:
        index.close()


def environ_without_secrets() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}


@pytest.fixture
def site():
    """The fixture website (``fixture_site.py``) on 127.0.0.1, threaded (a slow page holds no other request)."""
    pytest.importorskip("pytest_httpserver")
    import re

    from pytest_httpserver import HTTPServer

    from fixture_site import Site

    server = HTTPServer(host="127.0.0.1", port=0, threaded=True)
    server.start()
    fixture = Site()
    server.expect_request(re.compile(".*")).respond_with_handler(lambda request: fixture.handler(request))
    fixture.base = f"http://127.0.0.1:{server.port}"
    try:
        yield fixture
    finally:
        server.clear()
        if server.is_running():
            server.stop()


@pytest.fixture
def dovecot(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Debian's Dovecot IMAP server on 127.0.0.1 (imaps, a self-signed certificate that this test's
    processes trust through SSL_CERT_FILE), a user ``alice`` with a Maildir; stopped by its PID."""
    import shutil
    import socket
    import subprocess
    import tempfile
    import time
    from types import SimpleNamespace

    if shutil.which("dovecot") is None or shutil.which("openssl") is None:
        pytest.skip("no dovecot IMAP server here (scripts/setup.sh --test installs dovecot-imapd)")
    if os.geteuid() != 0:
        pytest.skip("dovecot runs as root here (its login processes drop to its own users)")
    folder = Path(tempfile.mkdtemp(prefix="ragloom-dovecot-"))
    folder.chmod(0o755)  # the mail user (dovecot) reaches its home under it
    for name in ("run", "state", "home"):
        (folder / name).mkdir()
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(folder / "key.pem"),
                    "-out", str(folder / "cert.pem"), "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    password = "wonderland-" + os.urandom(6).hex()
    (folder / "users").write_text(f"alice:{{PLAIN}}{password}\n")
    shutil.chown(folder / "home", "dovecot", "dovecot")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (folder / "dovecot.conf").write_text(f"""
base_dir = {folder}/run
state_dir = {folder}/state
log_path = {folder}/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = required
ssl_cert = <{folder}/cert.pem
ssl_key = <{folder}/key.pem
auth_mechanisms = plain
service imap-login {{
  inet_listener imap {{
    port = 0
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {port}
  }}
}}
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {folder}/users
}}
userdb {{
  driver = static
  args = uid=dovecot gid=dovecot home={folder}/home/%u
}}
mail_location = maildir:~/Maildir
first_valid_uid = 1
""")
    process = subprocess.Popen(["dovecot", "-F", "-c", str(folder / "dovecot.conf")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                log = (folder / "dovecot.log").read_text() if (folder / "dovecot.log").exists() else ""
                pytest.fail(f"dovecot did not start: {log[-2000:]}")
            time.sleep(0.1)
    monkeypatch.setenv("SSL_CERT_FILE", str(folder / "cert.pem"))
    try:
        yield SimpleNamespace(host="127.0.0.1", port=port, user="alice", password=password, folder=folder)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.rmtree(folder, ignore_errors=True)
