"""The liveness checks of router/health_beat.py: one timer asking every quiet router /health on a kept connection
(the real router keeps it; one closed quietly is replaced at once), a router the stream hears from is not asked,
and every way a check fails is said (no answer, garbage, a refusal, nothing listening), a chunked answer read
through the client's own /health instead."""

from __future__ import annotations

import os
import signal
import socket
import threading

import pytest

from app.services.router.client import HEALTH_BOUND, RouterClient
from app.services.router.health_beat import HealthBeat, Watch
from tests.conftest import RouterFactory
from tests.helpers import hostile_http as H
from tests.helpers.router import RouterProc
from tests.helpers.wait import wait_for

EVERY = 0.1  # the beat's tick here: many rounds in little time


class Woken:
    """Counts the beat's wakes of one watch (its `wake`)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> None:
        self.count += 1


def verdict(w: Watch) -> tuple[bool, str] | None:
    """The watch's word if it has one for the session (taken, as the session does), else None."""
    if not w.pending:
        return None
    w.pending = False
    return w.alive, w.why


async def test_the_real_router_is_asked_each_round_on_one_connection(router: RouterProc) -> None:
    beat, woken = HealthBeat(EVERY), Woken()
    async with RouterClient(router.url) as c:
        w = beat.watch(c, woken)
        try:
            await wait_for(lambda: woken.count == 1, 5, what="the first answer woke the session")
            assert verdict(w) == (True, "") and w.take_answered()
            await wait_for(w.take_answered, 2, what="a later answer")
            await wait_for(lambda: beat.ticks >= 12, 5, what="ten more rounds")
            assert w.take_answered()
            assert w.connections == 1  # kept, not one per check
            assert woken.count == 1  # nothing changed: answers alone do not wake the session
        finally:
            w.close()


@pytest.mark.timing
async def test_a_stopped_router_is_not_answering_then_answers_again(make_router: RouterFactory) -> None:
    router = make_router()
    beat, woken = HealthBeat(EVERY), Woken()
    async with RouterClient(router.url, name="box") as c:
        w = beat.watch(c, woken)
        try:
            await wait_for(lambda: verdict(w) == (True, ""), 5, what="the first answer")
            assert router.proc is not None
            os.kill(router.proc.pid, signal.SIGSTOP)
            try:
                took = await wait_for(lambda: w.pending, HEALTH_BOUND + 3, what="not answering")
                assert took <= EVERY + HEALTH_BOUND + 0.5
                assert verdict(w) == (False, "box: router not answering (/health: no answer within 2.5 s)")
            finally:
                os.kill(router.proc.pid, signal.SIGCONT)
            await wait_for(lambda: verdict(w) == (True, ""), 5, what="answering again")
        finally:
            w.close()


@pytest.mark.timing  # a round within 2 s, ten times over
async def test_a_router_the_stream_hears_from_is_not_asked() -> None:
    beat = HealthBeat(EVERY)
    with H.HostileRouter({}) as heard_from, H.HostileRouter({}) as silent:
        async with RouterClient(heard_from.url) as c1, RouterClient(silent.url) as c2:
            talking, quiet = beat.watch(c1, Woken()), beat.watch(c2, Woken())
            try:
                for _ in range(10):
                    talking.heard()
                    before = beat.ticks
                    await wait_for(lambda: beat.ticks > before, 2, what="a round")  # noqa: B023
                await wait_for(lambda: silent.paths.count("/health") >= 5, 2, what="the quiet one asked each round")
                assert heard_from.paths.count("/health") == 0  # the one the stream heard from: never
            finally:
                talking.close()
                quiet.close()
            assert beat._timer is None  # no watch left: the timer is stopped


async def test_a_kept_connection_closed_quietly_is_replaced_at_once() -> None:
    def quiet_close(c: socket.socket, stop: threading.Event) -> None:
        # Says nothing of closing (no "Connection: close"), then closes: as a router's keep-alive does at its end.
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n" + H.OK_HEALTH)

    beat, woken = HealthBeat(EVERY), Woken()
    with H.HostileRouter({"/health": quiet_close}) as r:
        async with RouterClient(r.url) as c:
            w = beat.watch(c, woken)
            try:
                await wait_for(lambda: w.connections >= 4, 5, what="four checks")
                assert woken.count == 1 and w.alive  # the first answer only: never a failure between
            finally:
                w.close()
            # one request each, once the router read the last: none lost, none sent twice
            await wait_for(lambda: r.paths.count("/health") >= w.connections, 2, what="the last request read")
            assert r.paths.count("/health") == w.connections


async def test_every_failure_is_said() -> None:
    def garbage(c: socket.socket, stop: threading.Event) -> None:
        H.send_body(c, b"<html>hello</html>")

    def refused(c: socket.socket, stop: threading.Event) -> None:
        body = b'{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}'
        c.sendall(H.head("503 Service Unavailable", length=len(body)) + body)

    def endless_head(c: socket.socket, stop: threading.Event) -> None:
        c.sendall(b"HTTP/1.1 200 OK\r\n")
        while not stop.is_set():
            c.sendall(b"X-Filler: " + b"y" * 1000 + b"\r\n")

    def silent(c: socket.socket, stop: threading.Event) -> None:
        stop.wait(5.0)

    cases = [
        (garbage, "box: router not answering (/health: box: GET /health: the router answered with something that "
                  "is not JSON: '<html>hello</html>')"),
        (refused, "box: router not answering (/health: GET /health: router answered 503: Loading model)"),
        (endless_head, "box: router not answering (/health: box: GET /health: an answer whose head has no end "
                       "within its limit)"),
        (silent, "box: router not answering (/health: no answer within 2.5 s)"),
    ]  # fmt: skip
    for answer, said in cases:
        beat = HealthBeat(EVERY)
        with H.HostileRouter({"/health": answer}) as r:
            async with RouterClient(r.url, name="box") as c:
                w = beat.watch(c, Woken())
                try:
                    await wait_for(lambda: w.pending, HEALTH_BOUND + 3, what=said)  # noqa: B023
                    assert verdict(w) == (False, said)
                finally:
                    w.close()


async def test_nothing_listening_is_said_with_its_cause() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    beat = HealthBeat(EVERY)
    async with RouterClient(f"http://127.0.0.1:{port}", name="box") as c:
        w = beat.watch(c, Woken())
        try:
            await wait_for(lambda: w.pending, 3, what="refused")
            alive, why = verdict(w) or (True, "")
            assert not alive and why.startswith(
                "box: router not answering (/health: box: GET /health: connection refused"
            )
        finally:
            w.close()


async def test_a_chunked_answer_is_read_through_the_clients_health() -> None:
    def chunked(c: socket.socket, stop: threading.Event) -> None:
        c.sendall(H.head() + H.chunk(H.OK_HEALTH) + b"0\r\n\r\n")

    beat = HealthBeat(EVERY)
    with H.HostileRouter({"/health": chunked}) as r:
        async with RouterClient(r.url) as c:
            w = beat.watch(c, Woken())
            try:
                await wait_for(lambda: verdict(w) == (True, ""), 3, what="answered")
                await wait_for(lambda: r.paths.count("/health") >= 4, 3, what="asked again")
                assert w.alive and not w.pending
            finally:
                w.close()
