"""Every character the dashboard draws beyond plain text, in a Unicode set and an ASCII set.

ASCII is chosen by config (ui.ascii), by LLAMAHERD_ASCII=1, or by a locale that is not UTF-8: a terminal reached
through an old ssh client or a serial console shows box and block characters as mojibake.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Glyphs:
    ascii: bool
    bar_full: str
    bar_empty: str
    bar_partials: str  # eighths, for a smooth bar end; "" in ASCII
    spark: str  # lowest to highest level
    loaded: str
    loading: str
    sleeping: str
    unloaded: str
    failed: str
    not_answering: str  # a loaded model whose child stopped answering (issue 35)
    downloading: str
    machine_up: str
    machine_down: str
    selected: str
    sort_up: str
    sort_down: str
    ellipsis: str
    sep: str
    dot: str  # between items of a status line

    def bar(self, fraction: float, width: int) -> str:
        """A horizontal bar `width` cells wide, filled to `fraction` (clamped to 0..1)."""
        if width <= 0:
            return ""
        f = min(1.0, max(0.0, fraction))
        if not self.bar_partials:
            full = round(f * width)
            return self.bar_full * full + self.bar_empty * (width - full)
        eighths = round(f * width * 8)
        full, part = divmod(eighths, 8)
        out = self.bar_full * full
        if part and full < width:
            out += self.bar_partials[part - 1]
        return out + self.bar_empty * (width - len(out))

    def sparkline(self, values: Iterable[float], width: int, top: float = 100.0) -> str:
        """The last `width` values as one character each, scaled to 0..top; left-padded with blanks."""
        vals = list(values)[-width:] if width > 0 else []
        levels = len(self.spark) - 1
        chars = [self.spark[min(levels, max(0, round(v / top * levels)))] if top > 0 else self.spark[0] for v in vals]
        return " " * (width - len(chars)) + "".join(chars)

    def wrap(self, text: str, width: int, max_lines: int) -> list[str]:
        """Word-wrapped to `width`, at most `max_lines` lines, the last clipped with the ellipsis."""
        # A word longer than a line (a URL, a path) is folded over lines rather than cut: wrap, never cut.
        words = [w[i : i + width] for w in text.split() for i in range(0, len(w), max(1, width))]
        lines: list[str] = []
        cur = ""
        for w in words:
            if cur and len(cur) + 1 + len(w) > width:
                lines.append(cur)
                cur = w
            else:
                cur = f"{cur} {w}" if cur else w
        if cur:
            lines.append(cur)
        if len(lines) > max_lines:
            lines = lines[:max_lines]
            # One ellipsis says there is more: after the last word when it fits, else in place of its end (two
            # were appended before, and a short last line showed both: `[Errno -2] ……`).
            last, more = lines[-1], " " + self.ellipsis
            fits = len(last) + len(more) <= width
            lines[-1] = last + more if fits else last[: max(0, width - len(self.ellipsis))] + self.ellipsis
        return [self.clip(ln, width) for ln in lines]

    def clip(self, text: str, width: int) -> str:
        if len(text) <= width:
            return text
        if width <= len(self.ellipsis):
            return text[:width]
        return text[: width - len(self.ellipsis)] + self.ellipsis


UNICODE = Glyphs(
    ascii=False,
    bar_full="█",
    bar_empty="·",
    bar_partials="▏▎▍▌▋▊▉",
    spark="▁▂▃▄▅▆▇█",
    loaded="●",
    loading="◐",
    sleeping="◒",
    unloaded="○",
    failed="✖",
    not_answering="◌",
    downloading="↓",
    machine_up="●",
    machine_down="○",
    selected="▌",
    sort_up="▲",
    sort_down="▼",
    ellipsis="…",
    sep="│",
    dot="·",
)

ASCII = Glyphs(
    ascii=True,
    bar_full="#",
    bar_empty=".",
    bar_partials="",
    spark="_.-=+*#",
    loaded="*",
    loading="~",
    sleeping="z",
    unloaded="o",
    failed="x",
    not_answering="?",
    downloading="v",
    machine_up="*",
    machine_down="o",
    selected=">",
    sort_up="^",
    sort_down="v",
    ellipsis="~",
    sep="|",
    dot="-",
)


def locale_is_utf8(environ: Mapping[str, str]) -> bool:
    """The C library's order: LC_ALL, then LC_CTYPE, then LANG; none set is the C locale, which is ASCII."""
    for var in ("LC_ALL", "LC_CTYPE", "LANG"):
        value = environ.get(var, "")
        if value:
            v = value.lower().replace("-", "")
            return "utf8" in v
    return False


def python_coerced(environ: Mapping[str, str], utf8_mode: bool) -> bool:
    """Python itself rewrites a C/POSIX locale to LC_CTYPE=C.UTF-8 at start-up (PEP 538, with UTF-8 mode, PEP 540).

    The terminal is no more UTF-8 for it, so that LC_CTYPE is Python's, not the operator's, and must not count.
    """
    return utf8_mode and not environ.get("LC_ALL") and environ.get("LC_CTYPE") == "C.UTF-8"


def want_ascii(config_ascii: bool, environ: Mapping[str, str] | None = None, utf8_mode: bool | None = None) -> bool:
    env = os.environ if environ is None else environ
    if config_ascii or env.get("LLAMAHERD_ASCII", "") not in ("", "0"):
        return True
    if python_coerced(env, bool(sys.flags.utf8_mode) if utf8_mode is None else utf8_mode):
        env = {k: v for k, v in env.items() if k != "LC_CTYPE"}
    return not locale_is_utf8(env)


def glyphs_for(ascii_mode: bool) -> Glyphs:
    return ASCII if ascii_mode else UNICODE
