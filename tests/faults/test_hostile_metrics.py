"""The activity poll's /metrics request against a hostile "router" on loopback (raw sockets): every answer that
never ends, lies about its size, drips, or is not HTTP ends with a typed error within its bound, and the poller
gives no figure for that model rather than failing."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

import pytest

from app.services.activity.metrics import METRICS_LIMIT
from app.services.activity.poll import ActivityPoller, Target
from app.services.core.errors import AnswerTooBig, BadAnswer, HerdError, RouterNotAnswering, RouterRefused
from app.services.router.client import RouterClient
from tests.helpers import hostile_http as H

Answer = Callable[[socket.socket, threading.Event], None]


def endless_metrics(c: socket.socket, stop: threading.Event) -> None:
    H.endless(c, "text/plain", b"llamacpp:tokens_predicted_total 1\n", b"junk 1\n", stop)


def not_http(c: socket.socket, stop: threading.Event) -> None:
    c.sendall(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")


def bad_chunk(c: socket.socket, stop: threading.Event) -> None:
    c.sendall(H.head(ctype="text/plain") + b"zz-not-hex\r\nllamacpp:x 1\r\n0\r\n\r\n")


def endless_head(c: socket.socket, stop: threading.Event) -> None:
    c.sendall(b"HTTP/1.1 200 OK\r\nX-Filler: ")
    while not stop.is_set():
        c.sendall(b"a" * 65536)


def closes_at_once(c: socket.socket, stop: threading.Event) -> None:
    c.shutdown(socket.SHUT_RDWR)


def no_metrics(c: socket.socket, stop: threading.Event) -> None:
    body = b'{"error":{"code":501,"message":"This server does not support metrics endpoint.","type":"x"}}'
    c.sendall(H.head("501 Not Implemented", length=len(body)) + body)


def garbage_lines(c: socket.socket, stop: threading.Event) -> None:
    body = b"\x00\xff\xfe\nllamacpp:requests_processing NaN\nllamacpp:tokens_predicted_total 40\n{{{{\n"
    c.sendall(H.head(ctype="text/plain") + H.chunk(body[:9]) + H.chunk(body[9:]) + b"0\r\n\r\n")


@pytest.mark.parametrize(
    ("answer", "error", "words"),
    [
        (endless_metrics, AnswerTooBig, "passed the 256 KiB limit"),
        (H.huge_declared, AnswerTooBig, "over the 256 KiB limit"),
        (H.headerless, RouterNotAnswering, "no answer within 1 s"),
        (H.drip_models, RouterNotAnswering, "no answer within 1 s"),
        (not_http, BadAnswer, "not an HTTP answer"),
        (bad_chunk, BadAnswer, "malformed chunk size"),
        (endless_head, BadAnswer, "has no end within its limit"),
        (no_metrics, RouterRefused, "does not support metrics"),
    ],
    ids=["endless-body", "64GB-declared", "silent", "drip", "not-http", "bad-chunk", "endless-head", "501"],
)
@pytest.mark.timing
async def test_each_hostile_answer_ends_with_its_reason_within_its_bound(
    answer: Answer, error: type[HerdError], words: str
) -> None:
    with H.HostileRouter({"/metrics": answer}) as r:
        async with RouterClient(r.url, name="box") as c:
            t0 = time.monotonic()
            with pytest.raises(error) as e:
                await c.child_metrics("m", METRICS_LIMIT, timeout=1.0)
            assert words in str(e.value)
            assert time.monotonic() - t0 < 5  # bounded: never the whole endless answer
            assert "autoload=false" in r.paths[-1]


async def test_garbage_lines_in_a_chunked_answer_are_skipped_and_the_poller_carries_on() -> None:
    with H.HostileRouter({"/metrics": garbage_lines}) as r:
        async with RouterClient(r.url, name="box") as c:
            text = await c.child_metrics("m", METRICS_LIMIT, timeout=1.0)
            assert "llamacpp:tokens_predicted_total 40" in text
            p = ActivityPoller(lambda: [Target("box", c, ("m",))])
            (ev,) = await p.poll()
            (a,) = ev.models
            # No /props here (404): the slot count is unknown, the rest is read; NaN is not a number of requests.
            assert a.metrics and a.requests_processing == 0 and a.slots_total is None


async def test_the_poller_survives_a_router_that_never_answers() -> None:
    with H.HostileRouter({"/metrics": H.headerless}) as r:
        async with RouterClient(r.url, name="box") as c:
            p = ActivityPoller(lambda: [Target("box", c, ("m",))])
            (ev,) = await p.poll()
            assert ev.models == () and ev.hint is None
