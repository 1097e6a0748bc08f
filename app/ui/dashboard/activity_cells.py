"""How a model's live activity reads in a table cell, and a machine's total on its card.

The cell: a sparkline of tokens/s over the last minute (the poller keeps SPARK_POINTS figures; they are drawn in
SPARK_CELLS cells, each the busiest of its share), the last tokens/s, and "slots" busy of total. A router without
--metrics shows "—" (the machines pane says once how to enable it).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from app.services.activity.metrics import ModelActivity
from app.ui.text.format import DIM, OK
from app.ui.text.glyphs import Glyphs

SPARK_CELLS = 8


def rate_text(v: float) -> str:
    if v < 10:
        return f"{v:.1f}"
    if v < 10_000:
        return f"{v:.0f}"
    return f"{v / 1000:.0f}k"


def squeeze(values: tuple[float, ...], cells: int) -> list[float]:
    """`values` in at most `cells` figures, each the largest of its consecutive share (a burst is never lost)."""
    if len(values) <= cells:
        return list(values)
    step = len(values) / cells
    return [max(values[int(i * step) : max(int(i * step) + 1, int((i + 1) * step))]) for i in range(cells)]


def activity_cell(a: ModelActivity | None, g: Glyphs, narrow: bool) -> tuple[str, str, Any]:
    """(text, style, sort value): sorted ascending, the busiest come first and models without figures last."""
    if a is None:
        return "", "", (2, 0.0, 0)
    if not a.metrics:
        return "—", DIM, (1, 0.0, 0)
    tps = a.tokens_per_s
    busy = a.requests_processing or 0
    parts = []
    if not narrow and a.spark:
        figs = squeeze(a.spark, SPARK_CELLS)
        parts.append(g.sparkline(figs, SPARK_CELLS, top=max(1.0, *figs)))
    parts.append("…" if tps is None else rate_text(tps))
    if a.slots_total:
        parts.append(f"slots {a.slots_busy or 0}/{a.slots_total}")  # labelled: a bare "0/1" read as nothing
    if a.requests_deferred:
        parts.append(f"+{a.requests_deferred} queued")
    active = bool(tps) or busy > 0
    return " ".join(parts), OK if active else DIM, (0, -(tps or 0.0), -busy)


def machine_total(acts: Iterable[ModelActivity]) -> str:
    """ "serving 123 tok/s · 2 requests" for a machine's card; "" when nothing is being served."""
    acts = [a for a in acts if a.metrics]
    tps = sum(a.tokens_per_s or 0.0 for a in acts)
    reqs = sum(a.requests_processing or 0 for a in acts)
    queued = sum(a.requests_deferred or 0 for a in acts)
    if not tps and not reqs and not queued:
        return ""
    text = f"serving {rate_text(tps)} tok/s · {reqs} request{'s' if reqs != 1 else ''}"
    return text + (f" · {queued} queued" if queued else "")
