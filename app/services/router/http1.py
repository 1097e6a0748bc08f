"""Plain HTTP/1.1 GETs on asyncio streams, for the hot paths httpx was too dear for: `plain_get`, one GET per fresh
connection (the activity poll's /metrics, the event stream's /models re-read), `KeptGet`, GETs asked again and
again on one kept connection (the router's /health where the event stream asks it beside a long list read; its
checks in the stream's silences go through router/health_beat.py, on connections of its own), and `open_stream`,
a GET whose body is read as it comes (the event stream, /models/sse).

Why not httpx: the poll asks every loaded model every 2 s (20 models: 10 requests a second), the router closes the
connection after every proxied answer (`Connection: close`, so nothing is saved by keeping one), and httpx spent
~5 ms of CPU per request on that path where plain_get spends ~0.5 ms (bench/activity_cost.py): the difference
between 4 % of a core and the issue's budget of 0.5 %. /health is asked every 1.5 s of silence; httpx spent ~1.1 ms
of CPU per check on its kept connection, KeptGet ~0.2 ms: with 5 managed routers the checks were a sixth of an idle
dashboard's CPU. Only `http://host:port` is spoken here (routers are reached on loopback, through the ssh tunnel for
remote ones); anything else goes through httpx.

Hand-written rather than h11 (0.16.0, installed with httpx) driving the same asyncio streams, since h11 cost more
CPU on both paths. bench/http1_h11.py, 2026-12-07, 2 cores shared with a test run, medians of 3,000 requests each,
CPU of this process per request (wall in brackets): kept /health, here 79 µs (114), h11 187 µs (227), httpx 944 µs
(993); one GET per connection of a loaded model's /metrics (2.5 kB, chunked), here 585 µs (1.40 ms), h11 676 µs
(1.44 ms), httpx 2,031 µs (2.94 ms). A run under more load, the same order (CPU, here / h11 / httpx): 75 / 165 /
888 µs and 686 / 955 / 2,677 µs. (httpx there is a bare AsyncClient.get.)

The event stream: a pull sends ~7 progress events a second, and reading them through httpx's layers was the largest
single part of the dashboard's CPU during a pull after the compositor (py-spy on the real app, bench/pull_cost.py).

Every answer is hostile input: the whole exchange is bounded in time, the head, each chunk-size line and the body
in size, and anything malformed is a BadAnswer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from app.services.core.bounded import MAX_ERROR_BYTES, mib
from app.services.core.connect_cause import connect_failure
from app.services.core.errors import AnswerTooBig, BadAnswer, RouterNotAnswering, RouterRefused, RouterUnreachable
from app.services.router.parse import error_message

MAX_HEAD = 16 * 1024  # status line and headers
MAX_CHUNK_LINE = 64  # "1a2b;ext\r\n"
STREAM_PIECE = 64 * 1024  # a streamed body is handed on in pieces of at most this, whatever a chunk's size says
_HEX = frozenset(b"0123456789abcdefABCDEF")


async def plain_get(
    host: str, port: int, path: str, headers: dict[str, str], limit: int, timeout: float, what: str
) -> bytes:
    """One GET over a fresh TCP connection. The body of a 2xx answer (at most `limit` bytes); RouterRefused with
    the router's words for 4xx/5xx."""
    try:
        async with asyncio.timeout(timeout):
            reader, writer, status, fields = await _ask(host, port, path, headers, what)
            try:
                room = limit if status < 400 else MAX_ERROR_BYTES
                body = await _read_body(reader, fields, room, what, cut=status >= 400)
            finally:
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()
    except TimeoutError:
        raise RouterNotAnswering(f"{what}: router not answering (no answer within {timeout:g} s)") from None
    except (OSError, asyncio.IncompleteReadError) as e:
        raise RouterUnreachable(f"{what}: {connect_failure(e)}") from None
    return _body_or_refused(status, body, path)


class KeptGet:
    """GETs on one kept connection: locally no TCP set-up per request, over ssh one forwarded channel rather than
    one per request. A kept connection the router closed meanwhile (its keep-alive ends after some requests or
    seconds) is replaced once, at once; after any failure the connection is dropped, since an answer that comes late
    would be read as the next one's."""

    def __init__(self, host: str, port: int, headers: dict[str, str]) -> None:
        self.host = host
        self.port = port
        self.headers = headers
        self._conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self.connections = 0
        """Connections opened so far (a test counts them)."""

    def close(self) -> None:
        if self._conn is not None:
            self._conn[1].close()
            self._conn = None

    async def get(self, path: str, limit: int, timeout: float, what: str) -> bytes:
        """The body of a 2xx answer (at most `limit` bytes); RouterRefused with the router's words for 4xx/5xx."""
        request = _get_request(self.host, self.port, path, self.headers, close=False)
        try:
            async with asyncio.timeout(timeout):
                status, body = await self._ask(request, limit, what)
        except TimeoutError:
            self.close()
            raise RouterNotAnswering(f"{what}: router not answering (no answer within {timeout:g} s)") from None
        except (OSError, asyncio.IncompleteReadError) as e:
            self.close()
            raise RouterUnreachable(f"{what}: {connect_failure(e)}") from None
        except BaseException:
            self.close()  # a malformed answer, a cancel: what is left on the connection is unknown
            raise
        return _body_or_refused(status, body, path)

    async def _ask(self, request: bytes, limit: int, what: str) -> tuple[int, bytes]:
        for attempt in (1, 2):
            if self._conn is not None and self._conn[0].at_eof():
                self.close()  # the router closed it while it was idle
            reused = self._conn is not None
            if self._conn is None:
                self._conn = await asyncio.open_connection(self.host, self.port, limit=MAX_HEAD)
                self.connections += 1
            reader, writer = self._conn
            try:
                writer.write(request)
                raw = await _read_until(reader, b"\r\n\r\n", what)
            except (ConnectionError, asyncio.IncompleteReadError) as e:
                self.close()
                nothing = not isinstance(e, asyncio.IncompleteReadError) or not e.partial
                if reused and nothing and attempt == 1:
                    continue  # closed by the router before it read this request: once more, on a new connection
                raise
            status, fields = parse_head(raw, what)
            body = await _read_body(reader, fields, limit if status < 400 else MAX_ERROR_BYTES, what, cut=status >= 400)
            keeps = (
                status < 400
                and fields.get("content-length", "").isdigit()
                and "chunked" not in fields.get("transfer-encoding", "").lower()
                and fields.get("connection", "").lower() != "close"
            )
            if not keeps:
                self.close()  # read to its end, or cut: nothing more to read on it
            return status, body
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


class PlainStream:
    """A streamed GET's answer: its status and fields, its body as it comes (`pieces`), `close` when done."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, status: int, fields: dict[str, str], what: str
    ) -> None:
        self._reader, self._writer = reader, writer
        self.status, self.fields, self.what = status, fields, what

    def close(self) -> None:
        self._writer.close()

    async def error_text(self, timeout: float) -> str:
        """The body of a 4xx/5xx answer, its first MAX_ERROR_BYTES, read within `timeout` ("" when it is not)."""
        with contextlib.suppress(TimeoutError, OSError, asyncio.IncompleteReadError, BadAnswer):
            async with asyncio.timeout(timeout):
                body = await _read_body(self._reader, self.fields, MAX_ERROR_BYTES, self.what, cut=True)
                return body.decode("utf-8", errors="replace")
        return ""

    async def pieces(self) -> AsyncIterator[bytes]:
        """The body as it arrives, de-chunked, in pieces of at most STREAM_PIECE bytes; ends with the body. A
        connection lost midway raises OSError or IncompleteReadError, a malformed chunk BadAnswer."""
        reader, what = self._reader, self.what
        if "chunked" not in self.fields.get("transfer-encoding", "").lower():
            declared = self.fields.get("content-length", "")
            left = int(declared) if declared.isdigit() else None  # None: until the connection closes
            while left is None or left > 0:
                data = await reader.read(STREAM_PIECE if left is None else min(left, STREAM_PIECE))
                if not data:
                    if left is not None:
                        raise asyncio.IncompleteReadError(b"", left)
                    return
                if left is not None:
                    left -= len(data)
                yield data
            return
        while True:
            size = _chunk_size(await _read_until(reader, b"\r\n", what), what)
            if size == 0:
                return
            left = size
            while left:
                data = await reader.read(min(left, STREAM_PIECE))
                if not data:
                    raise asyncio.IncompleteReadError(b"", left)
                left -= len(data)
                yield data
            end = await reader.readexactly(2)
            if end != b"\r\n":
                raise BadAnswer(f"{what}: a chunk not ended by CRLF after its {size} bytes: {end!r}")


async def open_stream(
    host: str, port: int, path: str, headers: dict[str, str], within: float, what: str
) -> PlainStream:
    """A GET over a fresh TCP connection whose answer is read as it comes: its head read within `within` seconds
    (RouterNotAnswering otherwise); no bound on the body, whose silences are normal on an event stream."""
    try:
        async with asyncio.timeout(within):
            reader, writer, status, fields = await _ask(host, port, path, headers, what)
    except TimeoutError:
        raise RouterNotAnswering(f"{what}: router not answering (no headers within {within:g} s)") from None
    except (OSError, asyncio.IncompleteReadError) as e:
        raise RouterUnreachable(f"{what}: {connect_failure(e)}") from None
    return PlainStream(reader, writer, status, fields, what)


async def _ask(
    host: str, port: int, path: str, headers: dict[str, str], what: str
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, int, dict[str, str]]:
    """A GET sent on a fresh connection (closed after the answer) and its head read: the streams, status, fields."""
    reader, writer = await asyncio.open_connection(host, port, limit=MAX_HEAD)
    try:
        writer.write(_get_request(host, port, path, headers, close=True))
        status, fields = parse_head(await _read_until(reader, b"\r\n\r\n", what), what)
    except BaseException:
        writer.close()
        raise
    return reader, writer, status, fields


def _chunk_size(line: bytes, what: str) -> int:
    size_text = line.split(b";", 1)[0].strip()
    if len(line) > MAX_CHUNK_LINE or not size_text or not _HEX.issuperset(size_text):
        raise BadAnswer(f"{what}: a malformed chunk size {line[:20]!r}")
    return int(size_text, 16)


def _get_request(host: str, port: int, path: str, headers: dict[str, str], close: bool) -> bytes:
    """`close`: ask the server to close the connection after its answer."""
    lines = [f"GET {path} HTTP/1.1", f"Host: {host}:{port}"]
    if close:
        lines.append("Connection: close")
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _body_or_refused(status: int, body: bytes, path: str) -> bytes:
    """The body of a 2xx answer; RouterRefused with the router's words for 4xx/5xx."""
    if status >= 400:
        raise RouterRefused(status, error_message(body.decode("utf-8", errors="replace")), "GET", path)
    return body


async def _read_until(reader: asyncio.StreamReader, sep: bytes, what: str) -> bytes:
    try:
        return await reader.readuntil(sep)
    except asyncio.LimitOverrunError:
        raise BadAnswer(f"{what}: an answer whose head or chunk line has no end within its limit") from None


def parse_head(raw: bytes, what: str) -> tuple[int, dict[str, str]]:
    """The status and the fields (names lower-cased) of an answer's head, its terminating blank line included."""
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


async def _read_body(reader: asyncio.StreamReader, fields: dict[str, str], limit: int, what: str, cut: bool) -> bytes:
    """The body within `limit`: over it, AnswerTooBig, or (`cut`, for an error answer that is only shown) its
    first `limit` bytes."""

    def too_big() -> AnswerTooBig:
        return AnswerTooBig(f"{what}: the answer passed the {mib(limit)} limit; stopped reading")

    if "chunked" in fields.get("transfer-encoding", "").lower():
        body = bytearray()
        while True:
            size = _chunk_size(await _read_until(reader, b"\r\n", what), what)
            if size == 0:
                return bytes(body)
            if len(body) + size > limit:
                if cut:
                    return bytes(body + await reader.read(limit - len(body)))
                raise too_big()
            body += await reader.readexactly(size)
            # Checked, not skipped: two bytes dropped unseen would hide a chunk that is not the size its line says,
            # and the body would be read wrong without a word.
            end = await reader.readexactly(2)
            if end != b"\r\n":
                raise BadAnswer(f"{what}: a chunk not ended by CRLF after its {size} bytes: {end!r}")
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
