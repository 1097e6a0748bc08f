"""The last lines of a file, each cut to its first bytes: `tail -n N | cut -b 1-W`, on the shell or in-process.

Over ssh it is the shell's pipeline (one command, one round trip). On this machine the same answer is read
in-process, backwards from the end: three processes less for each read (a failing model's reason is read every
time it fails). A line too long to find the start of within READ_BUDGET bytes is left to the shell, which reads
it whole to cut its head, as before.
"""

from __future__ import annotations

import os

LAST_LINES_SCRIPT = '[ -r "$2" ] || exit 1; tail -n "$1" -- "$2" | cut -b "1-$3"'
READ_BUDGET = 1 << 20  # bound: bytes read back from the end in-process before the shell is asked instead
_BLOCK = 64 * 1024


def split_output(out: bytes) -> list[bytes]:
    """The lines `tail | cut` printed (each ended by a newline, cut adds the last one)."""
    return out.removesuffix(b"\n").split(b"\n") if out else []


def read_last_lines(path: str, n: int, width: int, budget: int = READ_BUDGET) -> list[bytes] | None:
    """What LAST_LINES_SCRIPT prints for (n, path, width), split as split_output() does, read without a process.
    Raises OSError when the file cannot be read; None when the lines start further back than `budget` bytes."""
    if n <= 0:
        return []
    with open(path, "rb") as f:
        end = os.fstat(f.fileno()).st_size
        if end == 0:
            return []
        f.seek(end - 1)
        # tail counts a last line without a newline as a line; a newline that ends the file ends the last line.
        wanted = n + 1 if f.read(1) == b"\n" else n
        pos, data = end, b""
        while pos > 0 and data.count(b"\n") < wanted:
            if end - pos >= budget:
                return None
            step = min(_BLOCK, pos)
            pos -= step
            f.seek(pos)
            data = f.read(step) + data
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    return [ln[:width] for ln in lines[-n:]]
