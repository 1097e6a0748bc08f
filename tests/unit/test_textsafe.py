"""The sanitiser: every control character and escape sequence shown, never interpreted; rows never split."""

from __future__ import annotations

from rich.text import Text

from app.services.core.textsafe import is_visible, visible, visible_lines
from app.ui.text.plain_text import plain, safe_text

HOSTILE = [
    "\x1b]0;pwned\x07",  # OSC title
    "\x1b[2J\x1b[H",  # CSI clear screen, home
    "\x1b]52;c;aGVsbG8=\x07",  # OSC 52 clipboard
    "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\",  # OSC 8 hyperlink
    "\x9b2J",  # 8-bit CSI
    "\x9d0;t\x9c",  # 8-bit OSC ... ST
    "a\nb\rc\x00d\x7fe\x08",
    "abc\u202edcba\u2028next",
    "bad-bytes-\udcff\udc1b",
]


def test_every_hostile_string_becomes_visible_on_one_row() -> None:
    for s in HOSTILE:
        out = visible(s)
        assert is_visible(out), repr(out)
        assert "\n" not in out and "\r" not in out and "\x1b" not in out
        out.encode("utf-8")  # no lone surrogate left: printing it cannot raise


def test_shown_forms_are_what_an_operator_can_read() -> None:
    assert visible("\x1b]0;pwned\x07") == "\u241b]0;pwned\u2407"
    assert visible("a\nb") == "a\u240ab"
    assert visible("\x9b2J") == "\\x9b2J"
    assert visible("x\udcffy") == "x\\xffy"
    assert visible("a\tb") == "a b"


def test_plain_text_passes_unchanged_and_visible_is_idempotent() -> None:
    for s in ("tiny-a", "Saved [tiny-a] in /p/[/x]", "ünïcødé ✓ 中文", ""):
        assert visible(s) is s or visible(s) == s
    for s in HOSTILE:
        assert visible(visible(s)) == visible(s)


def test_multiline_keeps_rows_and_tabs_only() -> None:
    out = visible_lines("line one\r\n\tline \x1b[31mtwo\x1b[0m\n")
    assert out == "line one\n\tline \u241b[31mtwo\u241b[0m\n"
    assert is_visible(out, multiline=True) is False  # the tab is still there, on purpose
    assert "\x1b" not in out


def test_rich_side_keeps_markup_literal_and_styles() -> None:
    t = plain("[bold]x[/bold] \x1b[2J", "red")
    assert t.plain == "[bold]x[/bold] \u241b[2J" and str(t.style) == "red"
    # (Rich itself drops BEL, BS, VT, FF and CR from a Text; ESC and C1 it keeps, and those are what hurt.)
    assembled = Text.assemble(("name\x1b]0;t\x1b\\", "bold"), " ", ("\x9bok", "green"))
    safe = safe_text(assembled)
    assert safe.plain == "name\u241b]0;t\u241b\\ \\x9bok"
    styles = {safe.plain[s.start : s.end]: str(s.style) for s in safe.spans}
    assert styles == {"name\u241b]0;t\u241b\\": "bold", "\\x9bok": "green"}
