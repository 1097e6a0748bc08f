"""Connection failures worded by cause (issue 38, case 3): an attached router where nothing listens read `not
answering: GET http://127.0.0.1:59999/models/…` on its card, the cause cut and the word wrong (the CLI said
`[Errno 111] Connect call failed`)."""

from __future__ import annotations

import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.config import MachineConfig
from app.services.core.connect_cause import connect_cause, connect_failure
from app.services.core.errors import RouterUnreachable
from app.services.core.router_types import RouterState
from app.services.machine.machine import Machine
from app.services.router.client import RouterClient
from app.ui.text.format import router_text
from tests.helpers.wait import wait_for


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def plain_http_server() -> Iterator[int]:
    """A loopback socket that answers TLS hellos with plain HTTP, as an http-only router does."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    stop = threading.Event()

    def serve() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            with conn:
                conn.recv(4096)
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield int(srv.getsockname()[1])
    stop.set()
    t.join(5)
    srv.close()


async def test_refused_is_said_so_by_the_client() -> None:
    client = RouterClient(f"http://127.0.0.1:{closed_port()}")
    try:
        with pytest.raises(RouterUnreachable) as e:
            await client.models()
    finally:
        await client.aclose()
    assert "connection refused" in str(e.value)


async def test_tls_to_a_plain_http_port_is_said_to_be_tls(plain_http_server: int) -> None:
    async with httpx.AsyncClient() as c:
        with pytest.raises(httpx.ConnectError) as e:
            await c.get(f"https://127.0.0.1:{plain_http_server}/health")
    assert connect_cause(e.value) is not None and connect_cause(e.value).startswith("TLS")  # type: ignore[union-attr]


def test_causes_from_the_chain_an_http_client_raises() -> None:
    def wrapped(cause: BaseException) -> Exception:
        try:
            try:
                raise cause
            except BaseException as inner:
                raise httpx.ConnectError(str(inner)) from inner
        except httpx.ConnectError as outer:
            return outer

    assert connect_cause(wrapped(socket.gaierror(-2, "Name or service not known"))) == "name not resolved"
    assert connect_cause(wrapped(OSError(113, "No route to host"))) == "no route to host"
    assert connect_cause(wrapped(TimeoutError())) == "timed out connecting"
    assert connect_cause(wrapped(ssl.SSLError(1, "[SSL] record layer failure"))) is not None
    assert connect_failure(wrapped(ConnectionRefusedError(111, "Connect call failed"))).startswith("connection refused")
    assert connect_cause(ValueError("something else")) is None


async def test_an_attached_router_where_nothing_listens_is_unreachable_by_cause() -> None:
    m = Machine(MachineConfig(name="box", url=f"http://127.0.0.1:{closed_port()}"), lambda ev: None)
    m.start()
    try:
        await wait_for(lambda: m.view.router_state is RouterState.UNREACHABLE, timeout=10)
        text, _ = router_text(m.view, None)
        assert text.startswith("unreachable: ") and "connection refused" in text, text
        assert "not answering" not in text
    finally:
        await m.close()


def test_the_cli_says_connection_refused(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[[machines]]\nname = "box"\nurl = "http://127.0.0.1:{closed_port()}"\n')
    r = subprocess.run([sys.executable, "-m", "app", "--config", str(cfg), "models", "box"],
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    assert r.returncode == 1 and "connection refused" in r.stderr, r.stderr
