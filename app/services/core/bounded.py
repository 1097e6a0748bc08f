"""Size limits for everything read from outside: HTTP bodies, event-stream lines and events, log lines.

A router whose answer never ends (an endless /models body, an SSE line with no newline) once grew llamaherd
to 6.8 GB in 20 s: every reader buffered until the end that never came. Each reader here stops at its limit.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx

from app.services.core.errors import AnswerTooBig

MAX_JSON_BYTES = 16 * 1024 * 1024  # a 20,000-model list is ~10 MB
MAX_ERROR_BYTES = 64 * 1024  # an error answer is a sentence; more is cut
MAX_SSE_LINE = 1024 * 1024
MAX_SSE_EVENT = 4 * 1024 * 1024
MAX_LOG_LINE = 16 * 1024  # longer log lines are cut and marked
MAX_COMMAND_OUTPUT = 16 * 1024 * 1024  # what one remote command may send back (a preset, /proc of a busy host)
CUT_MARK = " …[cut: line longer than {limit} bytes]"


def mib(n: int) -> str:
    return f"{n / (1024 * 1024):g} MiB" if n >= 1024 * 1024 else f"{n // 1024} KiB"


async def read_capped(resp: httpx.Response, limit: int, what: str) -> bytes:
    """The whole body, or AnswerTooBig as soon as it passes `limit` (the rest is never read)."""
    declared = resp.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise AnswerTooBig(f"{what}: the answer is {mib(int(declared))}, over the {mib(limit)} limit")
    buf = bytearray()
    async for chunk in resp.aiter_bytes():
        buf += chunk
        if len(buf) > limit:
            raise AnswerTooBig(f"{what}: the answer passed the {mib(limit)} limit; stopped reading")
    return bytes(buf)


async def read_head(resp: httpx.Response, limit: int = MAX_ERROR_BYTES) -> str:
    """At most `limit` bytes of a body, as text (for error answers, which are only shown)."""
    buf = bytearray()
    async for chunk in resp.aiter_bytes():
        buf += chunk[: limit - len(buf)]
        if len(buf) >= limit:
            break
    return buf.decode("utf-8", errors="replace")


class LineSplitter:
    """Bytes in, complete lines out, never holding more than `limit` bytes of an unfinished line.

    A line over the limit comes out cut at the limit (`cut` tells which) and the rest of it, up to its newline,
    is dropped as it arrives.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._partial = bytearray()
        self._skipping = False

    def feed(self, data: bytes) -> list[tuple[bytes, bool]]:
        """(line without its newline, cut) for each line this data completes (or overflows)."""
        if not self._skipping:
            # The common case, in C: split once. A log flood is ~20,000 lines a second, and the loop below, one
            # line at a time, cost ~7 us a line: a tenth of a core before anything was parsed.
            parts = data.split(b"\n")
            if len(parts) > 1 and len(self._partial) + len(parts[0]) <= self.limit:
                last = parts.pop()
                if max(map(len, parts)) <= self.limit and len(last) <= self.limit:
                    if self._partial:
                        parts[0] = bytes(self._partial) + parts[0]
                        self._partial.clear()
                    self._partial += last
                    if b"\r" in data or b"\r" in parts[0]:
                        return [(p.removesuffix(b"\r"), False) for p in parts]
                    return [(p, False) for p in parts]
        return self._feed_slowly(data)

    def _feed_slowly(self, data: bytes) -> list[tuple[bytes, bool]]:
        out: list[tuple[bytes, bool]] = []
        start = 0
        while start < len(data):
            nl = data.find(b"\n", start)
            end = len(data) if nl < 0 else nl
            piece = data[start:end]
            if self._skipping:
                if nl >= 0:
                    self._skipping = False
            else:
                room = self.limit - len(self._partial)
                if len(piece) > room:
                    self._partial += piece[:room]
                    out.append((bytes(self._partial), True))
                    self._partial.clear()
                    self._skipping = nl < 0
                elif nl >= 0:
                    self._partial += piece
                    out.append((bytes(self._partial).removesuffix(b"\r"), False))
                    self._partial.clear()
                else:
                    self._partial += piece
            if nl < 0:
                break
            start = nl + 1
        return out

    def rest(self) -> bytes:
        """What is left unfinished at the end of the input."""
        data = bytes(self._partial)
        self._partial.clear()
        return data


def log_text(raw: bytes, cut: bool, limit: int = MAX_LOG_LINE) -> str:
    """A log line as text; a cut one says so."""
    text = raw.decode("utf-8", errors="replace")
    return text + CUT_MARK.format(limit=limit) if cut else text


async def sse_payloads(chunks: AsyncIterator[bytes], what: str) -> AsyncIterator[str]:
    """`data:` lines joined into events (a blank line ends one), each line and event within its limit."""
    lines = LineSplitter(MAX_SSE_LINE)
    data: list[str] = []
    size = 0
    async for chunk in chunks:
        for raw, cut in lines.feed(chunk):
            if cut:
                raise AnswerTooBig(f"{what}: an event-stream line passed the {mib(MAX_SSE_LINE)} limit")
            line = raw.decode("utf-8", errors="replace")
            if line.startswith("data:"):
                part = line[5:].lstrip(" ")
                size += len(part)
                if size > MAX_SSE_EVENT:
                    raise AnswerTooBig(f"{what}: an event passed the {mib(MAX_SSE_EVENT)} limit")
                data.append(part)
            elif line == "" and data:
                yield "\n".join(data)
                data, size = [], 0
    tail = lines.rest().decode("utf-8", errors="replace")
    if tail.startswith("data:"):
        data.append(tail[5:].lstrip(" "))
    if data:
        yield "\n".join(data)
