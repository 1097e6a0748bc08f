"""Every reach into Rich's internals. One: the names Rich's and Textual's modules bind to Rich's width cache, each
replaced. Written against rich==15.0.0, pinned in pyproject.toml; tests/ui/test_cell_len_fix.py fails when an
upgrade makes it a no-op. No upstream issue found (searched Rich's and Textual's issues for the memory of
`cached_cell_len` and the growth of its cache).

The cache: `rich.cells.cached_cell_len`, 4,096 entries keyed by each text measured.

Every followed log line is a new key there (the message's segment, the piece a crop or the compositor cuts from it,
the whole row): ~250 bytes an entry with the string it keeps alive, ~1.2 MB once full. At the soak's ~660 lines a
minute it took ~25 minutes to fill, so it was most of what a 20-minute soak's second half still grew; and a full
cache holds text the scrollback already keeps packed. Printable ASCII (nearly all text here: `visible` has made every
control character printable) is one cell a character, exactly as Rich counts it, so its width is its length, taken
without the cache; any other text still goes through Rich's own cached function, so every width is Rich's.

Rich, and Textual after it, bind the function by name at import (`from rich.cells import cached_cell_len`), so the
replacement is put in place of each such name in their modules.
"""

from __future__ import annotations

import sys

from rich import cells

_RICH_CACHED = cells.cached_cell_len
"""Rich's own lru_cache-wrapped function, kept for the text that is not printable ASCII."""

PATCHED_PACKAGES = ("rich", "textual")


def cell_len_ascii_uncached(text: str, unicode_version: str = "auto") -> int:
    """Cells `text` takes, as Rich's `cached_cell_len` says; printable ASCII measured without its cache."""
    if text.isascii() and text.isprintable():
        return len(text)
    return _RICH_CACHED(text, unicode_version)


def measure_ascii_uncached() -> int:
    """Replace Rich's cached function wherever a module of Rich or Textual bound it (idempotent); the number of
    names replaced. Modules imported later take the replacement from `rich.cells`."""
    replaced = 0
    for name, module in list(sys.modules.items()):
        if name.partition(".")[0] not in PATCHED_PACKAGES or module is None:
            continue
        for attr, value in list(vars(module).items()):
            if value is _RICH_CACHED:
                setattr(module, attr, cell_len_ascii_uncached)
                replaced += 1
    _RICH_CACHED.cache_clear()  # most of what it held is ASCII text it will no longer be asked about
    return replaced
