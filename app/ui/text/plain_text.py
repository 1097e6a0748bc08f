"""Outside text into widgets as plain, visible text: never parsed as markup, no control sequence reaching the
terminal (the rules are in app/services/core/textsafe.py; this is the Rich/Textual side of them)."""

from __future__ import annotations

from rich.text import Text

from app.services.core.textsafe import is_visible, visible, visible_lines


def plain(text: str, style: str = "", *, multiline: bool = False) -> Text:
    """A Text of outside text: markup characters stay literal, control characters are shown."""
    return Text(visible_lines(text) if multiline else visible(text), style=style)


def safe_text(t: Text, *, multiline: bool = False) -> Text:
    """`t` with any control character in its plain text made visible, keeping its styles.

    A net for Texts assembled from many pieces: the pieces that carry outside text should already be visible.
    """
    if is_visible(t.plain, multiline=multiline):
        return t
    # Cut at every span edge so each piece has one set of styles, then make each piece visible on its own.
    edges = sorted({e for s in t.spans for e in (s.start, s.end) if 0 < e < len(t.plain)})
    out = Text(style=t.style, justify=t.justify, overflow=t.overflow, no_wrap=t.no_wrap, end=t.end, tab_size=t.tab_size)
    for piece in t.divide(edges):
        shown = visible_lines(piece.plain) if multiline else visible(piece.plain)
        part = Text(shown)
        for span in piece.spans:
            if span.end > span.start:
                part.stylize(span.style, 0, len(shown))
        out.append_text(part)
    return out
