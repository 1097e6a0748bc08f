"""The remote agent's framing (ssh_agent.py), pure: request text, answer headers, answers fed in pieces."""

from __future__ import annotations

import pytest

from app.services.ssh.remote_shell import parse_header, request_text
from app.services.ssh.remote_shell_script import MARK, OUTPUT_LIMIT


def test_a_request_says_how_many_lines_follow() -> None:
    assert request_text(7, "echo 'a\nb'") == b"R 7 2\necho 'a\nb'\n"
    assert request_text(8, "true") == b"R 8 1\ntrue\n"
    with pytest.raises(ValueError, match="NUL"):
        request_text(9, "echo \0")


def test_an_answer_is_taken_piece_by_piece_up_to_its_sizes() -> None:
    rid, ans = parse_header(f"{MARK} 12 3 5 2 5 2".encode())
    assert rid == 12 and ans.rc == 3 and not ans.complete
    buf = bytearray(b"hel")
    assert ans.feed(buf) == 3 and not ans.complete
    buf = bytearray(b"lo!!@@next")
    assert ans.feed(buf) == 4 and ans.complete  # the rest belongs to the next answer
    assert (bytes(ans.out), bytes(ans.err)) == (b"hello", b"!!")


def test_an_empty_answer_is_complete_at_once() -> None:
    _, ans = parse_header(f"{MARK} 1 0 0 0 0 0".encode())
    assert ans.complete and ans.feed(bytearray(b"x")) == 0


@pytest.mark.parametrize(
    "line",
    [
        b"hello from a .bashrc",
        f"{MARK} 1 0 5".encode(),
        f"{MARK} 1 0 {OUTPUT_LIMIT + 1} 0 0 0".encode(),
        f"{MARK} 1 0 -1 0 0 0".encode(),
        f"{MARK} x 0 0 0 0 0".encode(),
    ],
)
def test_anything_else_is_not_an_answer(line: bytes) -> None:
    with pytest.raises(ValueError):
        parse_header(line)
