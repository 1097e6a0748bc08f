"""A bound Textual does not keep: the styles caches (and rendered lines) of removed widgets.

`StylesCache.get_inner_outer` is an `lru_cache(1024)` on a method, so its key holds the StylesCache itself: up to
1,024 caches of widgets long gone (footer keys rebuilt, toasts dismissed) stayed alive with every line they had
rendered. In the soak's router cycle that was ~780 orphaned caches in 3 minutes (tracemalloc: StylesCache +776 while
the widgets alive stayed at 37). The two styles depend only on the colours, so the cache is keyed by them alone:
still 1,024 entries at most, none of them a widget's.
"""

from __future__ import annotations

from functools import lru_cache

from textual._styles_cache import StylesCache
from textual.color import Color
from textual.style import Style

INNER_OUTER_ENTRIES = 1024
"""Bound of the colour-pair cache (as Textual's)."""


@lru_cache(INNER_OUTER_ENTRIES)
def inner_outer(base_background: Color, background: Color) -> tuple[Style, Style]:
    """Inner and outer background styles, as StylesCache.get_inner_outer makes them."""
    return Style(background=base_background + background), Style(background=base_background)


def _get_inner_outer(_self: StylesCache, base_background: Color, background: Color) -> tuple[Style, Style]:
    return inner_outer(base_background, background)


def install() -> None:
    """Key Textual's inner/outer cache by colours only (idempotent); drops the caches the old one held."""
    old = StylesCache.__dict__.get("get_inner_outer")
    if old is not _get_inner_outer:
        if cache_clear := getattr(old, "cache_clear", None):
            cache_clear()
        StylesCache.get_inner_outer = _get_inner_outer  # type: ignore[method-assign,assignment]
