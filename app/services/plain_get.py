"""One plain HTTP/1.1 GET over a fresh TCP connection, for the activity poll's /metrics requests.

Why not httpx: the poll asks every loaded model every 2 s (20 models: 10 requests a second), the router closes the
connection after every proxied answer (`Connection: close`, so nothing is saved by keeping one), and httpx spent
~5 ms of CPU per request on that path where this spends ~0.5 ms (bench/activity_cost.py): the difference between
4 % of a core and the issue's budget of 0.5 %. Only `http://host:port` is spoken here (routers are reached on
loopback, through the ssh tunnel for remote ones); anything else goes through httpx.

Every answer is hostile input: the head, each chunk-size line and the body are bounded, the whole exchange is
bounded in time, and anything malformed is a BadAnswer.
"""

from __future__ import annotations

import asyncio
import contextlib

from app.services.bounded import MAX_ERROR_BYTES, mib
from app.services.errors import AnswerTooBig, BadAnswer, RouterNotAnswering, RouterRefused, RouterUnreachable
from app.services.router_parse import error_message

MAX_HEAD = 16 * 1024  # status line and headers
MAX_CHUNK_LINE = 64  # "1a2b;ext\r\n"
_HEX = frozenset(b"0123456789abcdefABCDEF")


async def plain_get(
    host: str, port: int, path: str, headers: dict[str, str], limit: int, timeout: float, what: str
) -> bytes:
    """The body of a 2xx answer (at most `limit` bytes); RouterRefused with the router's words for 4xx/5xx."""
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port, limit=MAX_HEAD)
            try:
                lines = [f"GET {path} HTTP/1.1", f"Host: {host}:{port}", "Connection: close"]
                lines += [f"{k}: {v}" for k, v in headers.items()]
                writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
                status, fields = _head(await _read_until(reader, b"\r\n\r\n", what), what)
                room = limit if status < 400 else MAX_ERROR_BYTES
                body = await _body(reader, fields, room, what, cut=status >= 400)
            finally:
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()
    except TimeoutError:
        raise RouterNotAnswering(f"{what}: router not answering (no answer within {timeout:g} s)") from None
    except (OSError, asyncio.IncompleteReadError) as e:
        raise RouterUnreachable(f"{what}: {e or type(e).__name__}") from None
    if status >= 400:
        raise RouterRefused(status, error_message(body.decode("utf-8", errors="replace")), "GET", path)
    return body


async def _read_until(reader: asyncio.StreamReader, sep: bytes, what: str) -> bytes:
    try:
        return await reader.readuntil(sep)
    except asyncio.LimitOverrunError:
        raise BadAnswer(f"{what}: an answer whose head or chunk line has no end within its limit") from None


def _head(raw: bytes, what: str) -> tuple[int, dict[str, str]]:
    text = raw.decode("latin-1")
    status_line, *rest = text.split("\r\n")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not (parts[1].isdigit() and len(parts[1]) == 3):
        raise BadAnswer(f"{what}: not an HTTP answer: {status_line[:80]!r}")
    fields: dict[str, str] = {}
    for line in rest:
        name, sep, value = line.partition(":")
        if sep:
            fields[name.strip().lower()] = value.strip()
    return int(parts[1]), fields


async def _body(reader: asyncio.StreamReader, fields: dict[str, str], limit: int, what: str, cut: bool) -> bytes:
    """The body within `limit`: over it, AnswerTooBig, or (`cut`, for an error answer that is only shown) its
    first `limit` bytes."""

    def too_big() -> AnswerTooBig:
        return AnswerTooBig(f"{what}: the answer passed the {mib(limit)} limit; stopped reading")

    if "chunked" in fields.get("transfer-encoding", "").lower():
        body = bytearray()
        while True:
            line = await _read_until(reader, b"\r\n", what)
            size_text = line.split(b";", 1)[0].strip()
            if len(line) > MAX_CHUNK_LINE or not size_text or not _HEX.issuperset(size_text):
                raise BadAnswer(f"{what}: a malformed chunk size {line[:20]!r}")
            size = int(size_text, 16)
            if size == 0:
                return bytes(body)
            if len(body) + size > limit:
                if cut:
                    return bytes(body + await reader.read(limit - len(body)))
                raise too_big()
            body += await reader.readexactly(size)
            await reader.readexactly(2)
    declared = fields.get("content-length", "")
    if declared:
        if not declared.isdigit():
            raise BadAnswer(f"{what}: a malformed Content-Length {declared[:20]!r}")
        if int(declared) > limit and not cut:
            raise AnswerTooBig(f"{what}: the answer is {mib(int(declared))}, over the {mib(limit)} limit")
        return await reader.readexactly(min(int(declared), limit))
    data = await reader.read(limit + 1)  # until the connection closes
    body = bytearray(data)
    while data and len(body) <= limit:
        data = await reader.read(limit + 1 - len(body))
        body += data
    if len(body) > limit:
        if cut:
            return bytes(body[:limit])
        raise too_big()
    return bytes(body)
