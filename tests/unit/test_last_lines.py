"""The in-process `tail -n N | cut -b 1-W` gives what the shell's pipeline gives, byte for byte, for the shapes a
router log takes (no last newline, CR LF, empty lines, bytes that are not UTF-8, lines longer than W, fewer lines
than N), and leaves to the shell a line whose start is further back than its budget."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from app.services.hosts.last_lines import LAST_LINES_SCRIPT, read_last_lines, split_output
from app.services.hosts.local import LocalTransport

SHAPES = {
    "empty": b"",
    "one newline": b"\n",
    "no last newline": b"a\nb\nc",
    "ends in newline": b"a\nb\nc\n",
    "blank lines": b"\n\n\nx\n\n",
    "crlf": b"one\r\ntwo\r\nthree\r\n",
    "not utf-8": b"\xff\xfe bad\n\x1b[31mred\x1b[0m\n\x00nul\n",
    "long lines": b"".join(bytes([65 + k % 26]) * (k * 37 % 300) + b"\n" for k in range(500)),
    "across blocks": b"".join(b"line %d " % k + b"y" * (k % 997) + b"\n" for k in range(400)),
}


def shell(path: Path, n: int, width: int) -> list[bytes]:
    out = subprocess.run(["sh", "-c", LAST_LINES_SCRIPT, "sh", str(n), str(path), str(width)], capture_output=True)
    assert out.returncode == 0, out.stderr
    return split_output(out.stdout)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(("n", "width"), [(1, 5), (3, 1000), (20, 50), (400, 16385)])
def test_the_same_lines_as_tail_and_cut(tmp_path: Path, shape: str, n: int, width: int) -> None:
    f = tmp_path / "router.log"
    f.write_bytes(SHAPES[shape])
    assert read_last_lines(str(f), n, width) == shell(f, n, width)


def test_a_line_that_starts_beyond_the_budget_is_left_to_the_shell(tmp_path: Path) -> None:
    f = tmp_path / "router.log"
    f.write_bytes(b"before\n" + b"x" * 200_000 + b"\nafter\n")
    assert read_last_lines(str(f), 3, 100, budget=65_536) is None
    assert read_last_lines(str(f), 3, 100, budget=1 << 20) == shell(f, 3, 100) == [b"before", b"x" * 100, b"after"]


async def test_local_transport_answers_as_the_shell_does(tmp_path: Path) -> None:
    f = tmp_path / "router.log"
    f.write_bytes(b"a\n" + b"z" * 3_000_000 + b"\nb\n")  # past the budget: the shell's answer, the same
    t = LocalTransport()
    assert await t.last_lines(str(f), 2, 10) == [b"z" * 10, b"b"]
    assert await t.last_lines(str(tmp_path / "gone.log"), 2, 10) is None
