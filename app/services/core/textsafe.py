"""Outside text made harmless to show: the one sanitiser every widget and headless output uses.

Router answers, log lines, model ids, aliases, tags, file names, remote error text and config values can hold
terminal control sequences. Printed as they are, a log line with an OSC title sequence renamed the tmux pane and a
CSI clear-screen blanked the dashboard on every repaint. Here every C0/C1 control character, DEL, the Unicode
characters that reorder or split lines (bidi overrides, line/paragraph separators) and undecodable bytes kept as
surrogates are replaced by a visible stand-in, so an escape sequence shows as text (`␛]0;pwn␇`) and is never
interpreted. `--json` output does not come here: JSON escapes are exact already.

Pure functions, no textual or rich import: the CLI and the UI both call them.
"""

from __future__ import annotations

import re

# C0 controls as Unicode control pictures (U+2400 + code: ␀ … ␟), ESC as ␛, DEL as ␡.
_TABLE: dict[int, str] = {c: chr(0x2400 + c) for c in range(0x20)}
_TABLE[0x7F] = "\u2421"
# C1 controls (0x80-0x9f: CSI, OSC, ST ... in their 8-bit form) have no pictures: shown as \x9b.
_TABLE.update({c: f"\\x{c:02x}" for c in range(0x80, 0xA0)})
# Characters that reorder what follows them, or end a line in some renderers.
for _c in (0x200E, 0x200F, 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A)):
    _TABLE[_c] = f"\\u{_c:04x}"
# Lone surrogates (bytes a file name held that were not UTF-8, kept by surrogateescape) cannot be encoded to a
# terminal at all: printing one raised UnicodeEncodeError. Shown as the byte they stand for.
_TABLE.update({c: f"\\x{c - 0xDC00:02x}" for c in range(0xDC80, 0xDD00)})
_TABLE.update({c: f"\\u{c:04x}" for c in (*range(0xD800, 0xDC80), *range(0xDD00, 0xE000))})

_MULTI = dict(_TABLE)
del _MULTI[0x0A]  # a field that is several lines on purpose (a diff, an error with a log tail) keeps them

_TAB = 0x09
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def visible(text: str, *, multiline: bool = False, tab: str = " ") -> str:
    """`text` with every control character shown, never interpreted.

    One field (the default) always stays on one row: a newline shows as ␊. With `multiline`, newlines are kept
    (and a CR before one dropped); everything else is still made visible. A tab becomes `tab` (a space by default:
    a terminal would move the cursor to a column no row of ours expects).
    """
    if not _UNSAFE.search(text):
        return text
    if multiline:
        text = text.replace("\r\n", "\n")
    table = dict(_MULTI if multiline else _TABLE)
    table[_TAB] = tab
    return text.translate(table)


def visible_lines(text: str) -> str:
    """Several lines of outside text (an error with a log tail, a diff, a file): rows and tabs kept (a tab only
    moves the cursor along its own row), everything else visible."""
    return visible(text, multiline=True, tab="\t")


def is_visible(text: str, *, multiline: bool = False) -> bool:
    """Whether `text` is already harmless to show (what tests assert about a screen or an output)."""
    found = _UNSAFE.findall(text)
    if multiline:
        found = [c for c in found if c != "\n"]
    return not found
