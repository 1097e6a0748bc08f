"""HTTP/1.1 on asyncio streams, for the two plain clients (router/plain_get.py: one GET per connection;
router/kept_get.py: GETs on one kept connection): the GET request's bytes, and the answer's head and body read
within their bounds.

Every answer is hostile input: the head, each chunk-size line and the body are bounded, and anything malformed is a
BadAnswer (each client bounds the whole exchange in time).
"""

from __future__ import annotations

import asyncio

from app.services.core.bounded import mib
from app.services.core.errors import AnswerTooBig, BadAnswer, RouterRefused
from app.services.router.parse import error_message

MAX_HEAD = 16 * 1024  # status line and headers
MAX_CHUNK_LINE = 64  # "1a2b;ext\r\n"
_HEX = frozenset(b"0123456789abcdefABCDEF")


def get_request(host: str, port: int, path: str, headers: dict[str, str], close: bool) -> bytes:
    """`close`: ask the server to close the connection after its answer."""
    lines = [f"GET {path} HTTP/1.1", f"Host: {host}:{port}"]
    if close:
        lines.append("Connection: close")
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def body_or_refused(status: int, body: bytes, path: str) -> bytes:
    """The body of a 2xx answer; RouterRefused with the router's words for 4xx/5xx."""
    if status >= 400:
        raise RouterRefused(status, error_message(body.decode("utf-8", errors="replace")), "GET", path)
    return body


async def read_until(reader: asyncio.StreamReader, sep: bytes, what: str) -> bytes:
    try:
        return await reader.readuntil(sep)
    except asyncio.LimitOverrunError:
        raise BadAnswer(f"{what}: an answer whose head or chunk line has no end within its limit") from None


def parse_head(raw: bytes, what: str) -> tuple[int, dict[str, str]]:
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


async def read_body(reader: asyncio.StreamReader, fields: dict[str, str], limit: int, what: str, cut: bool) -> bytes:
    """The body within `limit`: over it, AnswerTooBig, or (`cut`, for an error answer that is only shown) its
    first `limit` bytes."""

    def too_big() -> AnswerTooBig:
        return AnswerTooBig(f"{what}: the answer passed the {mib(limit)} limit; stopped reading")

    if "chunked" in fields.get("transfer-encoding", "").lower():
        body = bytearray()
        while True:
            line = await read_until(reader, b"\r\n", what)
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
