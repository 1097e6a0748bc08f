"""What each column of the model table and the fleet view can hold, and which go first when the room is short
(widgets/column_plan.py).

Dropped first to last: tags, aliases, params, source, vision, ctx, size, memory, tok/s, fit. Never dropped: the
machine, the model (it narrows instead, down to MODEL_SHRINK) and its status.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.ui.dashboard.activity_cells import SPARK_CELLS
from app.ui.text.glyphs import Glyphs
from app.ui.widgets.column_plan import ColumnFit
from app.ui.widgets.table_rows import Col

MODEL_SHRINK = 20
RANKS = {
    "fit": 1, "activity": 2, "memory": 3, "size": 4, "ctx": 5, "vision": 6, "source": 7, "params": 8,
    "aliases": 9, "tags": 10,
}  # fmt: skip
"""Column key -> rank: the highest is dropped first; a key not here is never dropped."""


def floors(g: Glyphs) -> dict[str, int]:
    """The widest usual text of each column that holds a known range of texts (an unusual one still widens it)."""
    return {
        "status": len(f"{g.loading} loading 100% {g.bar(1.0, 5)}"),  # wider than loaded, failed (exit 137) ...
        "activity": SPARK_CELLS + len(" 12.3 slots 1/4"),  # sparkline, tok/s, slots
        "fit": len("tight"),
        "memory": len("1.2G +12G GPU"),
        "size": len("12.3G"),
        "ctx": len("128k"),
        "params": len("70.6B"),
    }


def column_fits(cols: Sequence[Col], g: Glyphs) -> tuple[ColumnFit, ...]:
    floor = floors(g)
    return tuple(
        ColumnFit(RANKS.get(c.key, 0), floor.get(c.key, 0), MODEL_SHRINK if c.key == "model" else 0) for c in cols
    )
