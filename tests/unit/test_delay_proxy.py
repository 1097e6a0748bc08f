"""The delay proxy of the slow-link benches (tests/helpers/delay_proxy.py): every byte arrives intact, in order,
and no sooner than the configured delay, in each direction."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from tests.helpers.delay_proxy import DelayProxy

ONE_WAY = 0.2


@pytest.fixture
def echo_server() -> Iterator[tuple[int, list[tuple[float, bytes]]]]:
    """A loopback server that records when each chunk arrived and sends it back at once."""
    seen: list[tuple[float, bytes]] = []
    srv = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                c, _ = srv.accept()
            except TimeoutError:
                continue
            with c:
                while data := c.recv(65536):
                    seen.append((time.monotonic(), data))
                    c.sendall(data)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield srv.getsockname()[1], seen
    stop.set()
    t.join(5)
    srv.close()


def test_the_delay_is_added_in_each_direction(echo_server: tuple[int, list[tuple[float, bytes]]]) -> None:
    port, seen = echo_server
    with DelayProxy("127.0.0.1", port, one_way=ONE_WAY) as p, socket.create_connection(("127.0.0.1", p.port)) as c:
        c.settimeout(10)
        sent = time.monotonic()
        c.sendall(b"ping")
        got = b""
        while len(got) < 4:
            got += c.recv(64)
        back = time.monotonic()
        assert got == b"ping"
        arrived = seen[0][0]
        assert arrived - sent >= ONE_WAY * 0.95  # client -> server
        assert back - arrived >= ONE_WAY * 0.95  # server -> client
        assert p.connections == 1 and p.bytes_up == 4 and p.bytes_down == 4


@pytest.mark.timing
def test_bytes_arrive_whole_and_in_order_and_the_delay_can_change(
    echo_server: tuple[int, list[tuple[float, bytes]]],
) -> None:
    port, _ = echo_server
    blob = bytes(range(256)) * 4096  # 1 MiB, many chunks
    with DelayProxy("127.0.0.1", port, one_way=0.01) as p, socket.create_connection(("127.0.0.1", p.port)) as c:
        c.settimeout(10)
        threading.Thread(target=c.sendall, args=(blob,), daemon=True).start()
        got = bytearray()
        while len(got) < len(blob):
            got += c.recv(1 << 16)
        assert bytes(got) == blob
        p.one_way = ONE_WAY
        t0 = time.monotonic()
        c.sendall(b"x")
        assert c.recv(1) == b"x"
        assert time.monotonic() - t0 >= 2 * ONE_WAY * 0.95


def test_a_closed_server_side_closes_the_client_side() -> None:
    srv = socket.create_server(("127.0.0.1", 0))
    with (
        DelayProxy("127.0.0.1", srv.getsockname()[1], one_way=0.05) as p,
        socket.create_connection(("127.0.0.1", p.port)) as c,
    ):
        s, _ = srv.accept()
        s.close()
        c.settimeout(5)
        assert c.recv(1) == b""  # EOF passed on (after the delay)
    srv.close()
