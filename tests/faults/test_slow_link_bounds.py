"""A slow but healthy link is not "no answer": every router time bound gets room for the link's measured round
trips (RouterClient.bound). The router here answers /health after 3 s, past HEALTH_BOUND-sized bounds."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from app.services.core.errors import RouterNotAnswering
from app.services.router.client import LINK_ROUND_TRIPS, RouterClient
from tests.helpers import hostile_http as H


def slow_health(c: socket.socket, stop: threading.Event) -> None:
    if not stop.wait(3.0):
        H.send_body(c, H.OK_HEALTH)


@pytest.mark.timing
async def test_a_slow_answer_is_no_answer_on_a_fast_link_but_not_on_a_slow_one() -> None:
    with H.HostileRouter({"/health": slow_health}) as r:
        async with RouterClient(r.url, timeout=2.0) as fast:
            assert fast.bound(2.0) == 2.0
            with pytest.raises(RouterNotAnswering, match="no answer within 2 s"):
                await fast.health()
        rtt = 0.4  # a 400 ms link: each bound gets LINK_ROUND_TRIPS of them
        async with RouterClient(r.url, timeout=2.0, round_trip=lambda: rtt) as slow:
            assert slow.bound(2.0) == pytest.approx(2.0 + LINK_ROUND_TRIPS * rtt)
            t0 = time.monotonic()
            assert await slow.health()
            assert time.monotonic() - t0 >= 2.9  # it did wait for the late answer
