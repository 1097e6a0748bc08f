"""The hand-written HTTP/1.1 GETs (router/http1.py) on a chunked answer, from a raw-socket "router" on loopback:
each chunk must end with CRLF where its size line says, or the answer is a BadAnswer, on a fresh connection as on a
kept one (which is then dropped); and the streamed GET the event stream reads, as it comes, in bounded pieces."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable

import pytest

from app.services.core.errors import BadAnswer, RouterNotAnswering
from app.services.router.http1 import STREAM_PIECE, KeptGet, open_stream, plain_get
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


# ---- open_stream: the event stream's body as it comes ----


async def _all_pieces(port: int, path: str = "/models/sse") -> tuple[int, bytes, list[int]]:
    stream = await open_stream("127.0.0.1", port, path, {}, 2.0, "box: GET /models/sse")
    try:
        pieces = [p async for p in stream.pieces()]
    finally:
        stream.close()
    return stream.status, b"".join(pieces), [len(p) for p in pieces]


async def test_a_chunked_stream_is_handed_on_as_it_comes_and_big_chunks_in_pieces() -> None:
    big = b"data: " + b"x" * (3 * STREAM_PIECE) + b"\n\n"
    events = [b'data: {"a":1}\n\n', b'data: {"b":', b"2}\n\n", big]
    with H.HostileRouter({"/models/sse": chunked(*(H.chunk(e) for e in events))}) as r:
        status, body, sizes = await _all_pieces(r.port)
    assert status == 200 and body == b"".join(events)
    assert max(sizes) <= STREAM_PIECE  # a chunk of 192 KiB is not read whole into memory


async def test_a_stream_with_a_length_or_until_close() -> None:
    body = b'data: {"a":1}\n\n'

    def sized(c: socket.socket, stop: threading.Event) -> None:
        c.sendall(H.head(ctype="text/event-stream", length=len(body)) + body)

    def until_close(c: socket.socket, stop: threading.Event) -> None:
        no_length = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
        c.sendall(no_length + body + body)

    with H.HostileRouter({"/models/sse": sized, "/other": until_close}) as r:
        assert (await _all_pieces(r.port))[1] == body
        assert (await _all_pieces(r.port, "/other"))[1] == body + body


async def test_a_stream_cut_midway_or_malformed_is_said() -> None:
    def cut(c: socket.socket, stop: threading.Event) -> None:
        c.sendall(H.head(ctype="text/event-stream") + b"100\r\n" + b"data: partial")  # then the connection ends

    with H.HostileRouter({"/models/sse": cut, "/bad": chunked(b"zz\r\ndata\r\n")}) as r:
        with pytest.raises(asyncio.IncompleteReadError):
            await _all_pieces(r.port)
        with pytest.raises(BadAnswer, match="a malformed chunk size"):
            await _all_pieces(r.port, "/bad")


async def test_a_stream_without_headers_is_not_waited_on_and_a_refusal_is_read() -> None:
    def refuse(c: socket.socket, stop: threading.Event) -> None:
        body = b'{"error":{"code":401,"message":"Invalid API Key"}}'
        c.sendall(H.head(status="401 Unauthorized", length=len(body)) + body)

    with H.HostileRouter({"/models/sse": H.headerless, "/refused": refuse}) as r:
        with pytest.raises(RouterNotAnswering, match=r"no headers within 0\.3 s"):
            await open_stream("127.0.0.1", r.port, "/models/sse", {}, 0.3, "box: GET /models/sse")
        stream = await open_stream("127.0.0.1", r.port, "/refused", {}, 2.0, "box: GET /refused")
        try:
            assert stream.status == 401 and "Invalid API Key" in await stream.error_text(2.0)
        finally:
            stream.close()
