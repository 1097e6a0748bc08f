"""The history's log read-back asks only for what was written since its last read, on a real file (offsets, a line
still being written, a log cut short, more than the byte cap): the shell read it runs on the serving machine, and
the same read done in this process for a local log, which must print the very same bytes."""

from __future__ import annotations

import random
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from app.services.core.bounded import MAX_LOG_LINE
from app.services.history.backfill import _READ
from app.services.history.log_readback import TAIL_WINDOW, read_matches
from app.services.history.reasons import LOG_PATTERN

Reader = Callable[[Path, int, int, str, int, int], bytes]


def by_shell(log: Path, off: int, cap: int, pattern: str, lines: int, cut: int) -> bytes:
    r = subprocess.run(["sh", "-c", _READ, "sh", str(log), str(off), str(cap), pattern, str(lines), str(cut)],
                       capture_output=True, check=True)  # fmt: skip
    return r.stdout


def here(log: Path, off: int, cap: int, pattern: str, lines: int, cut: int) -> bytes:
    out = read_matches(str(log), off, cap, pattern, lines, cut, scan_max=1 << 30)
    assert out is not None
    return out


@pytest.fixture(params=[by_shell, here], ids=["shell", "in-process"])
def reader(request: pytest.FixtureRequest) -> Reader:
    fn: Reader = request.param
    return fn


@pytest.fixture
def read(reader: Reader) -> Callable[..., tuple[int, str, list[str]]]:
    def read(log: Path, off: int, cap: int = 1 << 20, lines: int = 100) -> tuple[int, str, list[str]]:
        head, *out = reader(log, off, cap, "name=", lines, 200).decode().splitlines()
        end, mode = head.split()
        return int(end), mode, out

    return read


def test_reads_go_on_from_where_the_last_one_ended(
    tmp_path: Path, read: Callable[..., tuple[int, str, list[str]]]
) -> None:
    log = tmp_path / "router.log"
    log.write_bytes(b"a name=1\nnoise\nb name=2\n")
    end, mode, out = read(log, -1)
    assert (end, mode, out) == (log.stat().st_size, "full", ["a name=1", "b name=2"])
    with log.open("ab") as f:
        f.write(b"c name=3\nd name=4 being writ")  # the last line is not whole yet
    end2, mode, out = read(log, end)
    assert (mode, out) == ("more", ["c name=3"])
    assert end2 == end + len(b"c name=3\n")
    with log.open("ab") as f:
        f.write(b"ten\n")
    end3, mode, out = read(log, end2)
    assert (mode, out, end3) == ("more", ["d name=4 being written"], log.stat().st_size)
    assert read(log, end3)[1:] == ("more", [])


def test_a_log_cut_short_or_grown_past_the_cap_is_read_whole_again(
    tmp_path: Path, read: Callable[..., tuple[int, str, list[str]]]
) -> None:
    log = tmp_path / "router.log"
    log.write_bytes(b"x name=1\n" * 10)
    end, _, _ = read(log, -1)
    log.write_bytes(b"y name=2\n")  # cut short (a new run truncated it)
    assert read(log, end) == (9, "full", ["y name=2"])
    log.write_bytes(b"x name=1\n" * 10)
    _, mode, out = read(log, 9, cap=27)  # 81 bytes written since, past a 27-byte cap: the last 27 bytes
    assert (mode, out) == ("full", ["x name=1"] * 3)
    assert read(log, 0, lines=2)[2] == ["x name=1"] * 2


ROUTER_LINES = [
    b"0.00.403.707 I srv          load: spawning server instance with name=alpha on port 45381",
    b"[45381] 0.00.029.079 I srv  llama_server: model loaded",
    b"[45381] 0.00.029.100 I slot launch_slot_: id  0 | task 0 | processing task",
    b"0.00.517.943 I srv    unload_lru: models_max limit reached, removing LRU name=alpha",
    b"[45381] 0.00.300.000 E srv  some_func: something went wrong \x1b]0;pwn\x07",
    b"[ 45381] 0.00.300.001 E srv  a padded port",
    b"0.00.525.701 I srv           run: instance name=alpha exited with status 1",
    b"0.01.000.000 I srv  (reload) unloading model alpha",
    b"caf\xc3\xa9 stopping model instance name=beta \xe2\x9c\x93",  # UTF-8 text
    b"0.02.000.000 W srv  force-killing model instance name=beta\r",  # a CR the router's child printed
    b"llama_server: initializing " + b"x" * (MAX_LOG_LINE + 50),  # over the cut
    b"noise " * 40,
    b"",
]


def test_the_in_process_read_prints_what_the_shell_prints(tmp_path: Path) -> None:
    """A router's kind of log written in pieces, read from every kind of offset (none, the last end, inside a line,
    past the end), with small caps and line limits: byte for byte the same answer, END and MODE included."""
    rng = random.Random(7)
    log = tmp_path / "router.log"
    log.write_bytes(b"")
    ends = [-1]
    compared = 0
    for _ in range(40):
        with log.open("ab") as f:
            f.write(b"\n".join(rng.choice(ROUTER_LINES) for _ in range(rng.randrange(1, 30))))
            if rng.random() < 0.7:
                f.write(b"\n")  # else the last line is still being written
        size = log.stat().st_size
        for off in (ends[-1], -1, rng.randrange(0, size + 1), size + 10):
            cap, lines = rng.choice([(1 << 20, 20_000), (300, 20_000), (1 << 20, 3)])
            want = by_shell(log, off, cap, LOG_PATTERN, lines, MAX_LOG_LINE)
            assert here(log, off, cap, LOG_PATTERN, lines, MAX_LOG_LINE) == want, (off, cap, lines)
            compared += 1
        ends.append(int(want.split(b" ", 1)[0]))
    assert compared == 160
    assert len(set(ends)) > 30  # the reads went on through a growing log


def test_a_long_unended_line_and_an_empty_log(tmp_path: Path) -> None:
    log = tmp_path / "router.log"
    log.write_bytes(b"")
    assert here(log, -1, 1 << 20, LOG_PATTERN, 10, 200) == by_shell(log, -1, 1 << 20, LOG_PATTERN, 10, 200)
    # No newline in the pipeline's look-back window: the end of the last whole line is taken as that window's start.
    log.write_bytes(b"a name=1\n" + b"name=" * (TAIL_WINDOW // 5 + 10))
    for off in (-1, 0, 9):
        assert here(log, off, 1 << 20, "name=", 10, 200) == by_shell(log, off, 1 << 20, "name=", 10, 200)


def test_a_log_holding_zeros_or_bytes_that_are_not_text_is_read_as_text(tmp_path: Path) -> None:
    """A log's tail can be zeros after a crash, and a child can print anything: GNU grep then said "Binary file
    (standard input) matches" instead of the lines, and the history lost them. Both reads give the lines."""
    log = tmp_path / "router.log"
    zeros = b"\0" * 4096
    spawn = b"0.00.001.000 I srv load: spawning server instance with name=a on port 1\n"
    exited = b"0.\x0000.003.000 I srv run: name=a exited with status 1\n"  # a NUL inside a line, too
    log.write_bytes(spawn + zeros + b"\n[1] 0.00.002.000 E bad \xff\xfe bytes\n" + exited)
    want = by_shell(log, -1, 1 << 20, LOG_PATTERN, 100, MAX_LOG_LINE)
    assert b"Binary" not in want
    assert want.splitlines()[1:] == [
        b"0.00.001.000 I srv load: spawning server instance with name=a on port 1",
        b"[1] 0.00.002.000 E bad \xff\xfe bytes",
        b"0.00.003.000 I srv run: name=a exited with status 1",
    ]
    assert here(log, -1, 1 << 20, LOG_PATTERN, 100, MAX_LOG_LINE) == want


def test_a_big_read_or_an_unreadable_log_is_left_to_the_shell(tmp_path: Path) -> None:
    log = tmp_path / "router.log"
    log.write_bytes(b"a name=1\n" * 1000)
    assert read_matches(str(log), -1, 1 << 20, "name=", 10, 200, scan_max=8999) is None  # 9,000 bytes to scan
    assert read_matches(str(log), -1, 1 << 20, "name=", 10, 200, scan_max=9000) is not None
    assert read_matches(str(log), 8000, 1 << 20, "name=", 10, 200, scan_max=1000) is not None  # only what is new
    assert read_matches(str(tmp_path / "missing.log"), -1, 1 << 20, "name=", 10, 200) is None
    assert read_matches(str(tmp_path), -1, 1 << 20, "name=", 10, 200) is None  # a directory
