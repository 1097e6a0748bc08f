"""What a table row is: cells that say what they show and how they sort, and the keyed diff tables are updated by."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from rich.cells import cell_len
from rich.text import Text

from app.services.core.shared_values import SharedValues
from app.services.core.textsafe import visible


@dataclass(frozen=True)
class Col:
    key: str
    label: str


class CellSpec(NamedTuple):
    """What a cell shows and how it sorts; compared to decide whether a cell needs updating. The table holds these
    and makes a cell's Text only when its line is drawn (a Text per cell of 20,000 rows was most of the first
    paint's time and ~200 MB). A tuple rather than a dataclass: 200,000 of them are made for 20,000 rows, and a
    tuple is a third of the memory and quicker to make."""

    text: str
    style: str = ""
    sort: Any = ""

    def __rich__(self) -> Text:
        return SortCell(self)

    def __str__(self) -> str:
        return visible(self.text)


Row = tuple[CellSpec, ...]

SHARED_CELLS = 4096
"""Bound of the shared-cells table (emptied when full: then cells are merely not shared for a while)."""
_shared: SharedValues[CellSpec] = SharedValues(SHARED_CELLS)


def shared(cell: CellSpec) -> CellSpec:
    """The one CellSpec of this value: many rows show the same size, context, "no" vision or empty activity cell,
    and 20,000 rows held 20,000 equal cells of each such column (in each table)."""
    return _shared(cell)


@dataclass(frozen=True)
class RowDiff:
    add: tuple[tuple[str, Row], ...] = ()
    remove: tuple[str, ...] = ()
    update: tuple[tuple[str, int, CellSpec], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.add or self.remove or self.update)


def diff_rows(old: Mapping[str, Row], new: Mapping[str, Row]) -> RowDiff:
    """Keyed diff: rows to add (in `new`'s order), rows to remove, and single cells that changed."""
    add = tuple((k, r) for k, r in new.items() if k not in old)
    remove = tuple(k for k in old if k not in new)
    update: list[tuple[str, int, CellSpec]] = []
    for k, r in new.items():
        before = old.get(k)
        if before is None or before == r:
            continue
        update += [(k, i, c) for i, (b, c) in enumerate(zip(before, r, strict=True)) if b != c]
    return RowDiff(add, remove, tuple(update))


def width_of(text: str) -> int:
    """Cells `text` takes: its length when printable ASCII (rich's cell_len walks every character: most of a first
    paint of thousands of rows with long source paths)."""
    return len(text) if text.isascii() and text.isprintable() else cell_len(text)


class SortCell(Text):
    """How a CellSpec is drawn (tables sort by the spec's `sort`, numbers rather than printed text)."""

    def __init__(self, spec: CellSpec) -> None:
        # Every table cell passes here: the last place outside text is made visible (idempotent on visible text).
        super().__init__(visible(spec.text), style=spec.style, no_wrap=True, overflow="ellipsis", end="")
