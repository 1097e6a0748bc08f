"""Lines wrapped at a width, as screen rows: where each line starts, and which line a row belongs to.

For a view of up to 100,000 lines that grows at one end and loses lines at the other (a followed log): the rows
each line takes are kept as running totals, so a row is found by bisection and a new line costs one addition. A
line's width is counted, not rendered (its characters, as the panel counts them): a line is cut into `width`-cell
pieces, the pieces after the first indented by `indent` cells, so what comes first on a line (its level, its
model) stays a column of its own.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterable

from rich.style import Style
from textual.strip import Strip

COMPACT_AFTER = 4096  # lines dropped from the front before their totals are let go (and the rest rebased)
MIN_PIECE = 16  # narrower than this after the indent: continuation rows are not indented


class WrappedRows:
    def __init__(self) -> None:
        self.width = 0
        self.indent = 0
        # Rows up to and including each line, from the first line kept here: 8 bytes a line (a list of ints held
        # ~36, most of what a paused, wrapped panel grew by per line).
        self._ends = array("Q")
        self._first = 0  # lines at the front of _ends that have left the view

    def reset(self, width: int, indent: int, cells: Iterable[int]) -> None:
        """Count again, for a new width or a new set of lines."""
        self.width = width
        self.indent = indent if width - indent >= MIN_PIECE else 0
        self._ends, self._first = array("Q"), 0
        self.extend(cells)

    def rows_for(self, cells: int) -> int:
        if self.width <= 0 or cells <= self.width:
            return 1
        return 1 + -(-(cells - self.width) // (self.width - self.indent))

    def extend(self, cells: Iterable[int]) -> None:
        """Lines added at the end, each this many cells wide."""
        ends = self._ends
        total = ends[-1] if ends else 0
        for c in cells:
            total += self.rows_for(c)
            ends.append(total)

    def drop(self, lines: int) -> int:
        """The first `lines` lines left the view: the rows they took."""
        if lines <= 0:
            return 0
        before = self._base
        self._first = min(len(self._ends), self._first + lines)
        gone = self._base - before
        if self._first > COMPACT_AFTER and self._first * 2 > len(self._ends):
            base = self._base
            self._ends = array("Q", (e - base for e in self._ends[self._first :]))
            self._first = 0
        return gone

    @property
    def _base(self) -> int:
        return self._ends[self._first - 1] if self._first else 0

    def __len__(self) -> int:
        return len(self._ends) - self._first

    @property
    def total(self) -> int:
        """Rows of every line held."""
        return (self._ends[-1] if self._ends else 0) - self._base

    def start(self, line: int) -> int:
        """The row where line number `line` (0: the first held) starts."""
        if line <= 0:
            return 0
        return self._ends[self._first + min(line, len(self)) - 1] - self._base

    def locate(self, row: int) -> tuple[int, int]:
        """(line, piece of it) on row `row`; line is len(self) past the last row."""
        k = bisect.bisect_right(self._ends, row + self._base, lo=self._first) - self._first
        return k, row - self.start(k)


def piece(strip: Strip, k: int, width: int, indent: int, style: Style) -> Strip:
    """Piece `k` of a line's strip cut at `width` cells, the pieces after the first indented by `indent`."""
    if k == 0:
        return strip.crop_extend(0, width, style)
    start = width + (k - 1) * (width - indent)
    return Strip.join([Strip.blank(indent, style), strip.crop_extend(start, start + width - indent, style)])
