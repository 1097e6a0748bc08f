"""The activity poll asks an idle model every IDLE_ROUNDS rounds and a busy one every round: requests counted at a
loopback HTTP server whose /metrics counters the test moves (the real router's figures are in
tests/integration/test_activity_router.py; this is about which requests are made)."""

from __future__ import annotations

import socket
import threading

from app.services.activity.poll import IDLE_ROUNDS, ActivityPoller, Target
from app.services.router.client import RouterClient
from tests.helpers import hostile_http as H


class Counters:
    def __init__(self) -> None:
        self.generated = 100
        self.processing = 0

    def answer(self, c: socket.socket, stop: threading.Event) -> None:
        body = (
            f"# TYPE llamacpp:tokens_predicted_total counter\nllamacpp:tokens_predicted_total {self.generated}\n"
            f"llamacpp:prompt_tokens_total 10\nllamacpp:requests_processing {self.processing}\n"
            "llamacpp:requests_deferred 0\n"
        ).encode()
        c.sendall(H.head(ctype="text/plain", length=len(body)) + body)

    def slots(self, c: socket.socket, stop: threading.Event) -> None:
        H.send_body(c, b'[{"is_processing": true, "n_ctx": 64}]')


async def test_an_idle_model_is_asked_every_idle_rounds_and_a_busy_one_every_round() -> None:
    assert IDLE_ROUNDS == 3
    counters = Counters()
    with H.HostileRouter({"/metrics": counters.answer, "/slots": counters.slots}) as r:
        async with RouterClient(r.url, name="box") as c:
            p = ActivityPoller(lambda: [Target("box", c, ("m",))])

            async def asked() -> tuple[bool, float | None]:
                before = sum(x.startswith("/metrics") for x in r.paths)
                (ev,) = await p.poll()
                (a,) = ev.models  # shown every round, asked or not
                return sum(x.startswith("/metrics") for x in r.paths) > before, a.tokens_per_s

            assert await asked() == (True, None)  # the first poll: no rate yet, so asked again next round
            assert await asked() == (True, 0.0)  # nothing served: idle from here
            assert [await asked() for _ in range(5)] == [(False, 0.0), (False, 0.0), (True, 0.0),
                                                          (False, 0.0), (False, 0.0)]  # fmt: skip
            counters.generated += 50  # traffic starts: seen at the next round that asks
            busy = await asked()
            assert busy[0] and (busy[1] or 0) > 0
            counters.processing = 1  # a request in flight and nothing finished: still busy, asked every round
            assert [(await asked())[0] for _ in range(3)] == [True, True, True]
            counters.processing = 0  # done: one round finds it idle, then it is asked seldom again
            assert [(await asked())[0] for _ in range(4)] == [True, False, False, True]
