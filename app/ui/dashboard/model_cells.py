"""What a model's row in the tables shows: its cells (text, style, sort value) and whether a filter keeps it."""

from __future__ import annotations

from app.services.activity.metrics import ModelActivity
from app.services.core.natural_order import natural_key
from app.services.core.router_types import ModelInfo, ModelState
from app.services.core.shared_values import SharedValues
from app.services.core.textsafe import visible
from app.ui.dashboard.activity_cells import activity_cell
from app.ui.text.format import DIM, badge, human_bytes, human_count, human_ctx, state_rank, vision
from app.ui.text.glyphs import Glyphs
from app.ui.widgets.table_rows import CellSpec, Col, Row, shared

MODEL_COLUMNS: tuple[Col, ...] = (
    Col("model", "model"),
    Col("status", "status"),
    Col("activity", "tok/s"),
    Col("vision", "vision"),
    Col("ctx", "ctx"),
    Col("size", "size"),
    Col("params", "params"),
    Col("aliases", "aliases"),
    Col("tags", "tags"),
    Col("source", "source"),
)


def model_cells(
    m: ModelInfo, g: Glyphs, id_width: int, narrow: bool, act: ModelActivity | None = None, why: str = ""
) -> Row:
    btext, bstyle = badge(m, g)
    if narrow and " " in btext and "%" in btext:
        btext = btext.rsplit(" ", 1)[0]  # the percentage is enough where columns are scarce
    if why:  # its last recorded change (ui/reason_cells.py)
        btext = f"{btext} · {why}"
    low = natural_key(m.id)  # one key for both sort values (and the fleet's, which take it from the first cell)
    # Visible before clipping, so the width is that of what is shown (a newline in an id never splits its row).
    return (
        CellSpec(g.clip(visible(m.id), id_width), "bold", low),
        CellSpec(shared_text(btext), bstyle, (state_rank(m), low)),
        *_rest(m, g, narrow, act if m.state is ModelState.LOADED else None),
    )


TAILS = 4096
"""Bound of the table of shared row tails (emptied when full: then tails are merely made anew for a while)."""
_tails: dict[tuple[object, ...], Row] = {}


def _rest(m: ModelInfo, g: Glyphs, narrow: bool, act: ModelActivity | None) -> Row:
    """The cells after the status: none names the model, so rows that show the same share them (20,000 rows of
    one models directory were 160,000 equal cells per table, and making them most of the first paint)."""
    aliases = tuple(a for a in m.aliases if a != m.id) if m.aliases else ()
    # Keyed by the activity cell rather than the figures it is made of (they name the model).
    key = (activity_cell(act, g, narrow), vision(m), m.ctx, m.size, m.n_params, aliases, m.tags, m.source, g)
    hit = _tails.get(key)
    if hit is not None:
        return hit
    activity, (vtext, vstyle) = key[0], key[1]
    shown_aliases = visible(", ".join(aliases))
    tags = visible(", ".join(m.tags))
    tail = (
        shared(CellSpec(*activity)),
        shared(CellSpec(vtext, vstyle, {"yes": 0, "no": 1}.get(vtext, 2))),
        shared(CellSpec(human_ctx(m.ctx), "", m.ctx or -1)),
        shared(CellSpec(human_bytes(m.size), "", m.size or -1)),
        shared(CellSpec(human_count(m.n_params), "", m.n_params or -1)),
        shared(CellSpec(g.clip(shown_aliases, 24), DIM, shown_aliases)),
        shared(CellSpec(g.clip(tags, 24), DIM, ",".join(m.tags))),
        shared(CellSpec(visible(m.source), DIM, m.source)),
    )
    if len(_tails) >= TAILS:
        _tails.clear()
    _tails[key] = tail
    return tail


_texts: SharedValues[str] = SharedValues(TAILS)


def shared_text(text: str) -> str:
    """One string per status text ("○ unloaded" was made anew for each of 20,000 rows); bounded as the cells."""
    return _texts(text)


def matches(m: ModelInfo, text: str) -> bool:
    if not text:
        return True
    t = text.lower()
    hay = " ".join((m.id, *m.aliases, *m.tags, m.source, m.state.value)).lower()
    return t in hay
