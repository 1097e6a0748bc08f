"""The packed scrollback: the same lines as a deque(maxlen) would hold, read any way, at a fraction of the cost."""

from __future__ import annotations

import gc
import random
import tracemalloc
from collections import deque

import pytest

from app.services.core.log_lines import LogLine
from app.services.logs.parse import LogAttributor, skipped_marker
from app.services.logs.scrollback import CHUNK, DECODED_CHUNKS, Scrollback, summary

SHAPES = (
    "{t} I srv          load: spawning server instance with name=model-{m} on port {port}",
    "[{port}] {t} I slot launch_slot_: id  0 | task {i} | processing task",
    "[{port}] {t} I slot print_timing: id  0 | task {i} | prompt eval time = {ms} ms / {n} tokens ({tps} t/s)",
    "{t} I srv  log_server_r: request: POST /completion 127.0.0.1 200",
    "[{port}] {t} I srv  update_slots: all slots are idle",
    "{t} I srv           run: instance name=model-{m} exited with status 0",
    "[{port}] {t} W llama_context: n_ctx_per_seq ({n}) < n_ctx_train (32768)",
    "plain line from a child without a level, number {i}",
)


def router_lines(n: int, start: int = 0) -> list[LogLine]:
    """Lines shaped like a router's log under a completion cycle: spawns, child lines, requests, timings."""
    att = LogAttributor()
    out = []
    for i in range(start, start + n):
        port = 39000 + i // 40 % 7
        t = f"{i // 60000 % 10}.{i // 1000 % 60:02d}.{i % 1000:03d}.{i * 7 % 1000:03d}"
        shape = SHAPES[i % len(SHAPES)]
        out.append(att.parse(shape.format(t=t, port=port, m=port % 7, i=i, ms=i % 97, n=i % 4096, tps=i % 5000)))
    return out


def odd_lines() -> list[LogLine]:
    """What a hostile or broken log can put in a line: a lone surrogate, a newline, no text, wide characters."""
    att = LogAttributor()
    raws = ["bad byte \udcff here", "two\nlines in one", "", "\x1b[31mred\x1b[0m", "宽字符 🦙", "[1] x"]
    raws.append("0.00.000.001 E")
    return [att.parse(r) for r in raws] + [skipped_marker(12), LogLine(raw="r", text="not raw's tail", time="nowhere")]


@pytest.mark.parametrize("maxlen", [1, 7, CHUNK - 1, CHUNK, CHUNK + 1, 1000])
def test_holds_what_a_deque_holds_read_every_way(maxlen: int) -> None:
    rng = random.Random(maxlen)
    pool = router_lines(3000) + odd_lines() * 20
    rng.shuffle(pool)
    ref: deque[LogLine] = deque(maxlen=maxlen)
    sb = Scrollback(maxlen)
    at = 0
    while at < len(pool):
        batch = pool[at : at + rng.choice([1, 1, 3, 50, CHUNK, 700])]
        at += len(batch)
        if rng.random() < 0.3:
            for ln in batch:
                sb.append(ln)
        else:
            sb.extend(batch)
        ref.extend(batch)
        assert len(sb) == len(ref)
        for _ in range(20):
            i = rng.randrange(-len(ref), len(ref))
            assert sb[i] == ref[i]
        if rng.random() < 0.1:
            assert list(sb) == list(ref)
            assert list(reversed(sb)) == list(reversed(ref))
            assert sb[3:40:5] == list(ref)[3:40:5]
        # Kept per chunk, so a new reader need not unpack them all: the widest text and the lines the markers skipped
        # of what is held now, the dropped head of the oldest chunk not counted.
        assert sb.summary() == summary(ref)
    assert list(sb) == list(ref) and list(reversed(sb)) == list(reversed(ref))
    with pytest.raises(IndexError):
        sb[len(ref)]
    sb.clear()
    assert len(sb) == 0 and list(sb) == []


def test_the_bound_holds_past_it_and_so_does_the_unpacked_cache() -> None:
    sb = Scrollback(1000)
    for start in range(0, 20_000, 500):
        sb.extend(router_lines(500, start))
        # maxlen, plus at most CHUNK - 1 already dropped that share the oldest chunk with kept lines
        assert len(sb._sealed) * CHUNK + len(sb._open) < 1000 + CHUNK
    assert len(sb) == 1000 and sb[0] == router_lines(1, 19_000)[0]
    for i in range(0, 1000, 7):  # a read of every chunk, some twice
        sb[i]
    assert len(sb._decoded) <= DECODED_CHUNKS


def test_a_new_source_shares_the_packed_chunks_of_the_machine_it_shows() -> None:
    machine = Scrollback(10_000)
    machine.extend(router_lines(3 * CHUNK + 10))
    panel = Scrollback(10_000)
    panel.extend(machine)
    assert all(a is b for a, b in zip(panel._sealed, machine._sealed, strict=True))
    more = router_lines(500, 5000)
    machine.extend(more)
    panel.extend(more)
    assert list(panel) == list(machine)
    smaller = Scrollback(100)  # a shorter scrollback takes only the newest of them
    smaller.extend(machine)
    assert list(smaller) == list(machine)[-100:]


def test_ten_thousand_lines_cost_a_fraction_of_the_parsed_lines() -> None:
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept: deque[LogLine] = deque(router_lines(10_000), maxlen=10_000)
        gc.collect()
        parsed = tracemalloc.get_traced_memory()[0] - before  # the parsed lines, as a deque holds them
        text = sum(len(ln.raw) for ln in kept)
        sb = Scrollback(10_000)
        sb.extend(kept)
        del kept
        gc.collect()
        packed = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    print(f"10,000 lines ({text / 10_000:.0f} chars each): parsed {parsed / 10_000:.0f} B a line, "
          f"packed {packed / 10_000:.1f} B a line ({sb.packed_bytes() / 10_000:.1f} in the chunks)")  # fmt: skip
    assert packed < parsed / 5
    assert packed / 10_000 < 40


def test_a_search_passes_over_chunks_without_a_match_and_misses_no_line() -> None:
    att = LogAttributor()
    att.ports[39001] = "model-1"
    # A final sigma lowers to "ς" at the end of its line, but to "σ" before a cased letter: lowered as one text,
    # the chunk would hide "ας" if its lines were not kept apart.
    greek = [att.parse(r) for r in ("[39001] ΑΣ", "Βeta", "task 1234 again")]
    lines = router_lines(2000) + greek + router_lines(2000, 9000) + [skipped_marker(5)]  # the marker: in none sealed
    sb = Scrollback(10_000)
    sb.extend(lines)
    for needle, model in [("task 1234 ", None), ("ας", None), ("no such text", None), ("", "model-1"),
                          ("exited", "model-3"), ("TASK 1999 |".lower(), "model-2"), ("", "nobody")]:  # fmt: skip

        def wanted(ln: LogLine, needle: str = needle, model: str | None = model) -> bool:
            if ln.source == "skipped":
                return True
            return (model is None or ln.model == model) and needle in (ln.raw or ln.text).lower()

        got = [(k, ln) for k, ln in sb.candidates(needle, model) if wanted(ln)]
        assert got == [(k, ln) for k, ln in enumerate(lines) if wanted(ln)], (needle, model)
    unpacked = sum(1 for _ in sb.candidates("no such text"))
    assert unpacked < CHUNK  # the open chunk's: no sealed one was unpacked
