"""The size limits on everything read from outside: lines are cut at the limit, never held whole."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from app.services.core.bounded import MAX_SSE_LINE, LineSplitter, log_text, sse_payloads
from app.services.core.errors import AnswerTooBig


def test_lines_split_across_chunks_and_crlf() -> None:
    s = LineSplitter(10)
    assert s.feed(b"ab") == []
    assert s.feed(b"c\r\nde\nf") == [(b"abc", False), (b"de", False)]
    assert s.rest() == b"f"


def test_a_line_over_the_limit_is_cut_and_its_rest_dropped_as_it_comes() -> None:
    s = LineSplitter(4)
    assert s.feed(b"12345678") == [(b"1234", True)]
    assert s.feed(b"9" * 100_000) == []  # still the same line: nothing held, nothing emitted
    assert s.feed(b"0\nok\n") == [(b"ok", False)]


def test_a_line_exactly_at_the_limit_is_whole() -> None:
    s = LineSplitter(4)
    assert s.feed(b"1234") == []
    assert s.feed(b"\n") == [(b"1234", False)]


def test_cut_lines_say_so() -> None:
    assert log_text(b"abc", True, 3).startswith("abc …[cut: line longer than 3 bytes]")
    assert log_text(b"abc", False) == "abc"


async def _chunks(*parts: bytes) -> AsyncIterator[bytes]:
    for p in parts:
        yield p


async def test_sse_events_join_data_lines() -> None:
    got = [p async for p in sse_payloads(_chunks(b"data: a\nda", b"ta: b\n\n: comment\ndata: c\n\n"), "x")]
    assert got == ["a\nb", "c"]


async def test_sse_line_without_end_is_refused_at_the_limit() -> None:
    endless = (b"x" * 65536 for _ in range(10_000))

    async def gen() -> AsyncIterator[bytes]:
        yield b"data: {"
        for c in endless:
            yield c

    with pytest.raises(AnswerTooBig, match="line passed the 1 MiB limit"):
        async for _ in sse_payloads(gen(), "box: GET /models/sse"):
            pass
    assert MAX_SSE_LINE == 1024 * 1024


async def test_sse_event_without_end_is_refused_at_the_limit() -> None:
    async def gen() -> AsyncIterator[bytes]:
        while True:
            yield b"data: " + b"y" * 8000 + b"\n"

    with pytest.raises(AnswerTooBig, match="an event passed the 4 MiB limit"):
        async for _ in sse_payloads(gen(), "box"):
            pass


def test_the_split_at_once_gives_what_the_line_at_a_time_loop_gives() -> None:
    """feed() splits a chunk in one go when it can; the same bytes fed through the careful loop must give the same
    lines, whatever the chunking, the line lengths around the limit and the \\r before a newline."""
    import random

    rng = random.Random(16)
    for _ in range(300):
        text = b"".join(
            b"x" * rng.choice((0, 1, 5, 7, 8, 9, 15)) + rng.choice((b"\n", b"\r\n", b"\r\r\n", b""))
            for _ in range(rng.randint(1, 30))
        )
        fast, slow = LineSplitter(8), LineSplitter(8)
        got: list[tuple[bytes, bool]] = []
        want: list[tuple[bytes, bool]] = []
        at = 0
        while at < len(text):
            step = rng.randint(1, 24)
            chunk = text[at : at + step]
            at += step
            got += fast.feed(chunk)
            want += slow._feed_slowly(chunk)
        assert got == want, text
        assert fast.rest() == slow.rest()
