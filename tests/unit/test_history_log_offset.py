"""The history's log read-back asks only for what was written since its last read: the shell read it runs on the
serving machine, on a real file (offsets, a line still being written, a log cut short, more than the byte cap)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from app.services.history_backfill import _READ


def read(log: Path, off: int, cap: int = 1 << 20, lines: int = 100) -> tuple[int, str, list[str]]:
    r = subprocess.run(["sh", "-c", _READ, "sh", str(log), str(off), str(cap), "name=", str(lines), "200"],
                       capture_output=True, text=True, check=True)  # fmt: skip
    head, *out = r.stdout.splitlines()
    end, mode = head.split()
    return int(end), mode, out


def test_reads_go_on_from_where_the_last_one_ended(tmp_path: Path) -> None:
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


def test_a_log_cut_short_or_grown_past_the_cap_is_read_whole_again(tmp_path: Path) -> None:
    log = tmp_path / "router.log"
    log.write_bytes(b"x name=1\n" * 10)
    end, _, _ = read(log, -1)
    log.write_bytes(b"y name=2\n")  # cut short (a new run truncated it)
    assert read(log, end) == (9, "full", ["y name=2"])
    log.write_bytes(b"x name=1\n" * 10)
    _, mode, out = read(log, 9, cap=27)  # 81 bytes written since, past a 27-byte cap: the last 27 bytes
    assert (mode, out) == ("full", ["x name=1"] * 3)
    assert read(log, 0, lines=2)[2] == ["x name=1"] * 2
