"""The history's log read-back done in this process, for a log on this machine: the same bytes the shell pipeline of
history/backfill.py prints ("END MODE", then `tr -d '\\000' | grep -E PATTERN | tail -n LINES | cut -b 1-CUT` of the
bytes read),
without starting nine processes on every model change. Measured on a router's log, reading the 3 KB written since
the last read: 0.21 ms of CPU here against 8.2 ms for the pipeline (0.9 of it in this process), which under a
load/unload every 3 s was 0.6 % of a core. A remote log is still read by the pipeline, on its own machine.

Only a small read is done here: Python's regex scans ~30 ms a MiB, grep ~5, so past SCAN_HERE_MAX (where the two
cost the same: 8.1 and 9.8 ms for 256 KiB) the read is left to the pipeline, outside this process's GIL.
"""

from __future__ import annotations

import os
import re
from collections import deque

SCAN_HERE_MAX = 256 << 10
TAIL_WINDOW = 65536  # how far back both reads look for the end of the last whole line (history_backfill._READ too)
_CHUNK = 1 << 16


def _compiled(pattern: str) -> re.Pattern[bytes]:
    # The pattern is an ERE of literals, brackets, `*`, `+`, `^` and `\(`: Python's regex reads it the same way.
    return re.compile(pattern.encode())  # re keeps what it compiled: no cache of our own


def whole_lines_end(fd: int, size: int) -> int:
    """Where the file's last whole line ends: a line still being written is read next time."""
    if size == 0:
        return 0
    s = max(size - TAIL_WINDOW, 0)
    tail = os.pread(fd, size - s, s)
    if tail.endswith(b"\n"):
        return size
    i = tail.rfind(b"\n")
    return s + i + 1 if i >= 0 else s


def read_matches(path: str, offset: int, max_bytes: int, pattern: str, max_lines: int, cut: int,
                 scan_max: int = SCAN_HERE_MAX) -> bytes | None:  # fmt: skip
    """What the pipeline prints for these arguments, or None when it is for the pipeline to say: the file cannot be
    read (it then exits 1) or there is more than `scan_max` to scan."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        end = whole_lines_end(fd, size)
        off, mode = offset, "more"
        if off < 0 or off > end or end - off > max_bytes:
            off, mode = max(end - max_bytes, 0), "full"
        if end - off > scan_max:
            return None
        kept = _matching(fd, off, end, _compiled(pattern), max_lines, cut)
    except OSError:  # a directory, or the disk failing under the read
        return None
    finally:
        os.close(fd)
    return f"{end} {mode}\n".encode() + b"".join(kept)


def _matching(fd: int, start: int, end: int, rx: re.Pattern[bytes], max_lines: int, cut: int) -> deque[bytes]:
    """The last `max_lines` lines of [start, end) that match, each cut at `cut` bytes and ended by a newline."""
    kept: deque[bytes] = deque(maxlen=max(max_lines, 0))
    partial = b""
    pos = start
    while pos < end:
        data = os.pread(fd, min(_CHUNK, end - pos), pos)
        if not data:
            break  # cut short under the read: what was read is all there is
        pos += len(data)
        lines = (partial + data.replace(b"\0", b"")).split(b"\n")  # the pipeline's `tr -d '\000'`
        partial = lines.pop()
        kept.extend(ln[:cut] + b"\n" for ln in lines if rx.search(ln))
    if partial and rx.search(partial):  # an unended last line: grep prints it as a line
        kept.append(partial[:cut] + b"\n")
    return kept
