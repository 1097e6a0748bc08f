"""/health on one kept connection (router/http1.py's KeptGet): reused against the real router, replaced when the
router closed it, dropped after no answer, and the router's refusal or garbage said as before."""

from __future__ import annotations

import socket
import threading

import pytest

from app.services.core.errors import BadAnswer, RouterNotAnswering
from app.services.router.client import RouterClient
from tests.helpers import hostile_http as H
from tests.helpers.router import RouterProc


async def test_checks_share_one_connection_with_the_real_router(router: RouterProc) -> None:
    async with RouterClient(router.url) as c:
        assert c._kept is not None
        for _ in range(20):
            assert await c.health()
        assert c._kept.connections == 1


async def test_a_connection_the_router_closed_is_replaced_at_once() -> None:
    def quiet_close(c: socket.socket, stop: threading.Event) -> None:
        # Says nothing of closing (no "Connection: close"), then closes: as a router's keep-alive does at its end.
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n" + H.OK_HEALTH)

    with H.HostileRouter({"/health": quiet_close}) as r:
        async with RouterClient(r.url) as c:
            for _ in range(3):
                assert await c.health()
            assert c._kept is not None and c._kept.connections == 3
            assert r.paths.count("/health") == 3  # one request each: none lost, none sent twice


async def test_no_answer_drops_the_connection_and_the_next_check_starts_afresh() -> None:
    answered = threading.Event()

    def late_once(c: socket.socket, stop: threading.Event) -> None:
        if answered.is_set():
            H.send_body(c, H.OK_HEALTH)
            return
        answered.set()
        stop.wait(3.0)  # says nothing within the bound, like a SIGSTOPped router

    with H.HostileRouter({"/health": late_once}) as r:
        async with RouterClient(r.url) as c:
            with pytest.raises(RouterNotAnswering, match=r"no answer within 0\.5 s"):
                await c.health(timeout=0.5)
            assert await c.health(timeout=2.0)
            assert c._kept is not None and c._kept.connections == 2


async def test_garbage_and_refusals_are_said() -> None:
    def garbage(c: socket.socket, stop: threading.Event) -> None:
        H.send_body(c, b"<html>hello</html>")

    with H.HostileRouter({"/health": garbage}) as r:
        async with RouterClient(r.url) as c:
            with pytest.raises(BadAnswer, match="not JSON"):
                await c.health()
