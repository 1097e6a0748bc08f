"""The hand-written HTTP/1.1 GETs (router/http1.py) on a chunked answer, from a raw-socket "router" on loopback:
each chunk must end with CRLF where its size line says, or the answer is a BadAnswer, on a fresh connection as on a
kept one (which is then dropped)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable

import pytest

from app.services.core.errors import BadAnswer
from app.services.router.http1 import KeptGet, plain_get
from tests.helpers import hostile_http as H

BODY = b"llamacpp:tokens_predicted_total 40\n"

Answer = Callable[[socket.socket, threading.Event], None]


def chunked(*chunks: bytes) -> Answer:
    def answer(c: socket.socket, stop: threading.Event) -> None:
        c.sendall(H.head(ctype="text/plain") + b"".join(chunks) + b"0\r\n\r\n")

    return answer


def longer_than_said(data: bytes) -> bytes:
    """A chunk whose size line says two bytes fewer than it carries: the two bytes where its CRLF should be."""
    return f"{len(data) - 2:x}\r\n".encode() + data + b"\r\n"


async def test_well_formed_chunks_are_joined() -> None:
    with H.HostileRouter({"/metrics": chunked(H.chunk(BODY[:9]), H.chunk(BODY[9:]))}) as r:
        assert await plain_get("127.0.0.1", r.port, "/metrics", {}, 4096, 2.0, "box: GET /metrics") == BODY


@pytest.mark.parametrize(
    "chunks",
    [
        (longer_than_said(BODY),),
        (H.chunk(BODY[:9]), longer_than_said(BODY[9:])),
        (f"{len(BODY):x}\r\n".encode() + BODY + b"XY",),
        (f"{len(BODY):x}\r\n".encode() + BODY + b"\n" + H.chunk(b"more")[:-1],),
    ],
    ids=["longer-than-said", "second-chunk", "other-bytes", "bare-LF"],
)
async def test_a_chunk_without_its_crlf_is_a_bad_answer(chunks: tuple[bytes, ...]) -> None:
    with H.HostileRouter({"/metrics": chunked(*chunks)}) as r:
        with pytest.raises(BadAnswer, match=r"^box: GET /metrics: a chunk not ended by CRLF after its \d+ bytes"):
            await plain_get("127.0.0.1", r.port, "/metrics", {}, 4096, 2.0, "box: GET /metrics")
        kept = KeptGet("127.0.0.1", r.port, {})
        with pytest.raises(BadAnswer, match="a chunk not ended by CRLF"):
            await kept.get("/metrics", 4096, 2.0, "box: GET /metrics")
        assert kept._conn is None  # what is left on it is unknown: dropped
