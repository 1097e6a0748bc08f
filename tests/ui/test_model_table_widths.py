"""The table's columns hold still: a column that holds a known range of texts (status, tok/s, ctx …) is as wide as
the widest of them from the start, so a "loading 42%" badge coming and going moves no column (it used to widen
status on each load, and every column right of it jumped). Columns that name things fit their widest cell, and
narrow again when it is filtered out or belongs to another machine. When the room is short the least important
columns are dropped, and the border says which."""

from __future__ import annotations

import dataclasses
from typing import Any

from app.config import Config
from app.services.core.fleet_events import ModelsChanged
from app.services.core.router_types import LoadProgress, ModelInfo, ModelState
from app.ui.app import HerdApp, make_app
from app.ui.dashboard.model_table import KeyedTable
from tests.helpers.screen import screen_text
from tests.helpers.standin_fleet import NOW, demo_fleet, workstation_models
from tests.helpers.wait import wait_for

WIDE = (220, 40)


def with_gemma(**changes: Any) -> tuple[ModelInfo, ...]:
    return tuple(dataclasses.replace(m, **changes) if m.id == "gemma-3-4b-it" else m for m in workstation_models())


def width(table: KeyedTable, column: str) -> int:
    return table.column_width(column)


def status_of(app: HerdApp, model: str) -> str:
    return app.dashboard.model_table.rows_now[model][1].text


async def test_status_holds_still_as_loading_comes_and_goes() -> None:
    fleet = demo_fleet()
    loaded = with_gemma(state=ModelState.LOADED, progress=None)
    fleet.model_lists["workstation"] = loaded
    app = make_app(Config(), fleet, frozen_time=NOW)
    async with app.run_test(size=WIDE) as pilot:
        table = app.dashboard.model_table
        await wait_for(lambda: len(table.rows_now) == 5, pilot=pilot)
        await pilot.pause(0.1)
        settled, virtual = list(table.col_widths), table.virtual_size.width
        for _ in range(3):  # loads come and go: no column moves, during or after
            progress = LoadProgress(("text_model",), "text_model", 0.42)
            fleet.emit(ModelsChanged("workstation", with_gemma(state=ModelState.LOADING, progress=progress)))
            await wait_for(lambda: "42%" in status_of(app, "gemma-3-4b-it"), pilot=pilot)
            assert table.col_widths == settled and table.virtual_size.width == virtual
            assert "42%" in screen_text(app)  # the whole badge shows in the width held for it
            fleet.emit(ModelsChanged("workstation", loaded))
            await wait_for(lambda: "loaded" in status_of(app, "gemma-3-4b-it"), pilot=pilot)
            await pilot.pause(0.1)
            assert table.col_widths == settled and table.virtual_size.width == virtual
        assert "42%" not in screen_text(app)


def fits(table: KeyedTable) -> bool:
    """Every column exactly as wide as its widest cell, its header, or what it can hold (when it shows anything)."""
    for i, c in enumerate(table.cols):
        widest = max(len(row[i].text) for row in table.rows_now.values())
        if width(table, c.key) != max(len(c.label), widest, table.col_fits[i].floor if widest else 0):
            return False
    return True


async def test_a_filtered_out_widest_row_and_another_machine_narrow_their_columns() -> None:
    fleet = demo_fleet()
    app = make_app(Config(), fleet, frozen_time=NOW)
    async with app.run_test(size=WIDE) as pilot:
        table = app.dashboard.model_table
        await wait_for(lambda: len(table.rows_now) == 5, pilot=pilot)
        assert fits(table) and not table.hidden
        widest = width(table, "model")
        status = width(table, "status")
        table.set_filter("gemma")  # the longest id and the aliases are filtered out
        await wait_for(lambda: list(table.rows_now) == ["gemma-3-4b-it"], pilot=pilot)
        assert fits(table) and width(table, "model") == len("gemma-3-4b-it") < widest
        assert width(table, "aliases") == len("aliases")
        assert width(table, "status") == status  # what it can hold, whichever statuses are shown
        table.set_filter("")
        await wait_for(lambda: len(table.rows_now) == 5, pilot=pilot)
        assert fits(table)
        await pilot.press("2")  # gpu-box: its own widths, not the widest of both machines
        await wait_for(lambda: table.machine == "gpu-box" and len(table.rows_now) == 2, pilot=pilot)
        assert fits(table) and width(table, "model") < widest and width(table, "status") == status


async def test_a_short_room_drops_the_least_important_columns_and_says_which() -> None:
    fleet = demo_fleet()
    app = make_app(Config(), fleet, frozen_time=NOW)
    async with app.run_test(size=WIDE) as pilot:
        table = app.dashboard.model_table
        await wait_for(lambda: len(table.rows_now) == 5, pilot=pilot)
        assert not table.hidden and "hidden" not in str(table.border_subtitle)
        await pilot.resize_terminal(120, 40)
        await wait_for(lambda: bool(table.hidden), pilot=pilot, what="columns dropped at 120 columns")
        hidden = table.hidden_labels()
        # tok/s first (the stand-in has no figures: nothing in it), then the least important: tags, aliases …
        # (named in the table's order in the border)
        assert {"tok/s", "tags", "aliases"} <= set(hidden) and not {"model", "status", "size"} & set(hidden), hidden
        assert f"hidden: {', '.join(hidden)}" in str(table.border_subtitle)
        assert table.table_width <= table.scrollable_content_region.width  # no column cut at the edge
        text = screen_text(app)
        assert "status" in text and "tags" not in text.split("models:", 1)[1].split("\n", 2)[1]
        # A hidden column's cells changing moves nothing on screen.
        widths = list(table.col_widths)
        fleet.emit(ModelsChanged("workstation", with_gemma(tags=("a-much-longer-tag-than-before",))))
        await wait_for(lambda: "a-much-longer" in table.rows_now["gemma-3-4b-it"][8].text, pilot=pilot)
        assert table.col_widths == widths
        await pilot.resize_terminal(*WIDE)
        await wait_for(lambda: not table.hidden, pilot=pilot, what="every column back")
        assert "hidden" not in str(table.border_subtitle)
