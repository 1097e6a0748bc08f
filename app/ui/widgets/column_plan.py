"""Which columns a table shows and how wide: decided from what each column can hold, not from what it holds now.

A status cell's text grows and shrinks as a model loads ("◐ loading  42% ██▌··" and back to "● loaded"); sized by
its widest cell now, the column moved every column right of it on each load. Here a column that can hold a known
range of texts (status, tok/s, ctx, size …) has the width of its widest possible text (`floor`) from the start, and
only a text beyond that (a download's badge, a reason note) widens it. Columns that name things (model, aliases,
tags, source) are as wide as their widest cell: they change when the rows change, not with a status.

When the room is short, the one `shrink` column (the model id) gives its width first, down to `shrink`; then
columns are dropped, least important (highest `rank`) first, and the table says which are hidden.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

PAD = 2  # one cell of padding each side of a column


@dataclass(frozen=True)
class ColumnFit:
    rank: int = 0
    """0: never dropped; among the others the highest rank is dropped first."""
    floor: int = 0
    """The width of the widest text the column can hold (its usual texts); it has it whenever it shows any."""
    shrink: int = 0
    """Non-zero for the column that narrows (down to this) before any column is dropped."""


@dataclass(frozen=True)
class Plan:
    widths: tuple[int, ...]
    """Content width of each column (a hidden one keeps its wanted width: it is not drawn)."""
    hidden: frozenset[int]
    """Indices of the columns not shown."""


def wanted(labels: Sequence[int], widest: Sequence[int], fits: Sequence[ColumnFit]) -> list[int]:
    """Each column's width: its header, its widest cell, and its floor when it shows anything at all (an activity
    column with no loaded model is only as wide as its header)."""
    return [max(label, cell, fit.floor if cell else 0) for label, cell, fit in zip(labels, widest, fits, strict=True)]


def plan(wants: Sequence[int], fits: Sequence[ColumnFit], room: int, empty: Sequence[bool] | None = None) -> Plan:
    """The widths and hidden columns for `room` cells (0 or less: not laid out yet, nothing is dropped). A column
    whose every cell is `empty` (tok/s with no model loaded) goes before any droppable column that shows something."""
    shown = list(range(len(wants)))
    if room <= 0:
        return Plan(tuple(wants), frozenset())
    blank = empty or [False] * len(wants)

    def order(i: int) -> tuple[bool, int, int]:
        return blank[i], fits[i].rank, i

    def least(columns: Sequence[int]) -> int:
        total = sum(wants[i] + PAD for i in columns)
        give = sum(max(0, wants[i] - fits[i].shrink) for i in columns if fits[i].shrink)
        return total - give

    while least(shown) > room:
        droppable = [i for i in shown if fits[i].rank > 0]
        if not droppable:
            break
        shown.remove(max(droppable, key=order))
    widths = list(wants)
    over = sum(wants[i] + PAD for i in shown) - room
    for i in shown:
        if over > 0 and fits[i].shrink:
            cut = min(over, max(0, wants[i] - fits[i].shrink))
            widths[i] -= cut
            over -= cut
    return Plan(tuple(widths), frozenset(range(len(wants))) - frozenset(shown))
