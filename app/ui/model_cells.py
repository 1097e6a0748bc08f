"""What a model's row in the tables shows: its cells (text, style, sort value) and whether a filter keeps it."""

from __future__ import annotations

from app.services.activity import ModelActivity
from app.services.textsafe import visible
from app.services.types import ModelInfo, ModelState
from app.ui.activity_cells import activity_cell
from app.ui.format import DIM, badge, human_bytes, human_count, human_ctx, state_rank, vision
from app.ui.glyphs import Glyphs
from app.ui.table_rows import CellSpec, Col, Row

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
    vtext, vstyle = vision(m)
    # Visible before clipping, so the width is that of what is shown (a newline in an id never splits its row).
    shown_id = visible(m.id)
    aliases = visible(", ".join(a for a in m.aliases if a != m.id))
    tags = visible(", ".join(m.tags))
    return (
        CellSpec(g.clip(shown_id, id_width), "bold", m.id.lower()),
        CellSpec(btext, bstyle, (state_rank(m), m.id.lower())),
        CellSpec(*activity_cell(act if m.state is ModelState.LOADED else None, g, narrow)),
        CellSpec(vtext, vstyle, {"yes": 0, "no": 1}.get(vtext, 2)),
        CellSpec(human_ctx(m.n_ctx), "", m.n_ctx or -1),
        CellSpec(human_bytes(m.size), "", m.size or -1),
        CellSpec(human_count(m.n_params), "", m.n_params or -1),
        CellSpec(g.clip(aliases, 24), DIM, aliases),
        CellSpec(g.clip(tags, 24), DIM, ",".join(m.tags)),
        CellSpec(visible(m.source), DIM, m.source),
    )


def matches(m: ModelInfo, text: str) -> bool:
    if not text:
        return True
    t = text.lower()
    hay = " ".join((m.id, *m.aliases, *m.tags, m.source, m.state.value)).lower()
    return t in hay
