"""The column plan (widgets/column_plan.py, dashboard/column_fits.py): widths from what a column can hold, the model
column narrowing before any column is dropped, then the least important columns dropped first."""

from __future__ import annotations

from app.ui.dashboard.column_fits import MODEL_SHRINK, column_fits, floors
from app.ui.dashboard.model_cells import MODEL_COLUMNS
from app.ui.text.glyphs import glyphs_for
from app.ui.widgets.column_plan import PAD, ColumnFit, plan, wanted

G = glyphs_for(False)
FITS = column_fits(MODEL_COLUMNS, G)
LABELS = [len(c.label) for c in MODEL_COLUMNS]
KEYS = [c.key for c in MODEL_COLUMNS]


def widths_for(status: str, activity: str) -> list[int]:
    """Wanted widths for a table of one model whose status and tok/s cells read so."""
    widest = {"model": 17, "status": len(status), "activity": len(activity), "vision": 3, "ctx": 4, "size": 4,
              "params": 4, "aliases": 5, "tags": 4, "source": 6}  # fmt: skip
    return wanted(LABELS, [widest[k] for k in KEYS], FITS)


def test_status_and_activity_widths_hold_still_as_their_text_grows_and_shrinks() -> None:
    loaded = widths_for("● loaded", "▁▂▃ 1.2 slots 0/1")
    loading = widths_for(f"◐ loading  42% {G.bar(0.42, 5)}", "")
    full = widths_for(f"◐ loading 100% {G.bar(1.0, 5)}", "▁▂▃▄▅▆▇█ 12.3 slots 1/4")
    status, activity = KEYS.index("status"), KEYS.index("activity")
    assert loaded[status] == loading[status] == full[status] == floors(G)["status"]
    assert loaded[activity] == full[activity] == floors(G)["activity"]
    assert loading[activity] == len("tok/s")  # no loaded model: the column is only its header
    # A text beyond what the column holds (a reason note) still widens it: cut, it would say less.
    noted = widths_for("● loaded · evicted for chat-big · 14:02", "")
    assert noted[status] == len("● loaded · evicted for chat-big · 14:02")


def test_the_model_column_narrows_first_then_the_least_important_columns_drop() -> None:
    wants = widths_for("● loaded", "▁▂▃ 1.2 slots 0/1")
    full = sum(w + PAD for w in wants)
    assert plan(wants, FITS, full).hidden == frozenset()
    assert plan(wants, FITS, 0).hidden == frozenset()  # not laid out yet: nothing dropped
    # A long model id gives its width first, down to MODEL_SHRINK, before any column goes.
    model = KEYS.index("model")
    long = list(wants)
    long[model] = 40
    room = sum(w + PAD for w in long) - 10
    p = plan(long, FITS, room)
    assert p.hidden == frozenset() and p.widths[model] == 30
    p = plan(long, FITS, room - (30 - MODEL_SHRINK) - 1)
    assert [KEYS[i] for i in p.hidden] == ["tags"]
    assert p.widths[model] == MODEL_SHRINK + len("tags") + PAD - 1  # what dropping tags freed beyond need: back
    # Ever shorter rooms drop columns in one order, and a column once dropped stays dropped in a shorter room.
    order: list[str] = []
    for room in range(full, 0, -1):
        hidden = [KEYS[i] for i in plan(wants, FITS, room).hidden]
        for k in hidden:
            if k not in order:
                order.append(k)
        assert set(order[: len(hidden)]) == set(hidden), (room, hidden, order)
    assert order == ["tags", "aliases", "params", "source", "vision", "ctx", "size", "activity"]
    assert "model" not in order and "status" not in order  # never dropped


def test_a_planned_table_fits_its_room_when_it_can() -> None:
    wants = widths_for("● loaded", "▁▂▃ 1.2 slots 0/1")
    for room in range(60, 200):
        p = plan(wants, FITS, room)
        shown = sum(w + PAD for i, w in enumerate(p.widths) if i not in p.hidden)
        assert shown <= room, room
    # The smallest table: model (narrowed) and status only; a room below it is overrun, never an error.
    tiny = plan(wants, FITS, 10)
    assert {KEYS[i] for i in range(len(KEYS)) if i not in tiny.hidden} == {"model", "status"}


def test_an_unranked_table_drops_nothing() -> None:
    fits = [ColumnFit()] * 3
    p = plan([10, 10, 10], fits, 5)
    assert p.hidden == frozenset() and p.widths == (10, 10, 10)


def test_a_column_with_nothing_in_it_goes_before_one_that_shows_something() -> None:
    wants = widths_for("● loaded", "")  # no model loaded: tok/s is empty, only its header
    empty = [k == "activity" for k in KEYS]
    full = sum(w + PAD for w in wants)
    p = plan(wants, FITS, full - 1, empty)
    assert [KEYS[i] for i in p.hidden] == ["activity"]  # not tags, which shows something
    assert [KEYS[i] for i in plan(wants, FITS, full - 1).hidden] == ["tags"]
