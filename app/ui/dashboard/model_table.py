"""The model table of the selected machine (row key = model id); the keyed diff it is updated with is in
dashboard/keyed_model_table.py, the cells of a row in dashboard/model_cells.py."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from app.services.activity.metrics import ModelActivity
from app.services.core.router_types import ModelInfo
from app.ui.dashboard.activity_cells import machine_total
from app.ui.dashboard.column_fits import column_fits
from app.ui.dashboard.keyed_model_table import KeyedTable
from app.ui.dashboard.model_cells import MODEL_COLUMNS, matches, model_cells
from app.ui.text.glyphs import Glyphs
from app.ui.text.plain_text import plain
from app.ui.widgets.border_text import set_border_text
from app.ui.widgets.table_rows import Row, RowDiff

__all__ = ["MODEL_COLUMNS", "KeyedTable", "ModelTable", "matches", "model_cells"]


class ModelTable(KeyedTable):
    """The selected machine's models, row key = model id."""

    def __init__(self, glyphs: Glyphs, **kw: Any) -> None:
        super().__init__(MODEL_COLUMNS, glyphs, column_fits(MODEL_COLUMNS, glyphs), **kw)
        self.machine = ""
        self.models: tuple[ModelInfo, ...] = ()
        self.activity: Mapping[str, ModelActivity] = {}
        self.notes: Mapping[str, str] = {}
        """Each model's last recorded change, by model id (set before `show`)."""

    def show(
        self,
        machine: str,
        models: Iterable[ModelInfo],
        stale: bool = False,
        activity: Mapping[str, ModelActivity] | None = None,
        only: Collection[str] | None = None,
        by_id: Mapping[str, ModelInfo] | None = None,
    ) -> RowDiff:
        """`only` (with `by_id`, the models by id): just these models changed, the other rows stay as they are."""
        if machine != self.machine:
            self.reset_rows()  # another machine's list is another table, not an update of this one
            self.machine = machine
            only = None
        self.models = tuple(models)
        self.activity = {} if stale else (activity or {})
        # A machine that is down keeps its last known list, dimmed, rather than an empty table.
        note = (" (nothing known yet)" if not self.models else " (last known)") if stale else ""
        total = machine_total(self.activity.values())  # in the title: a line more on the card moved the panes
        set_border_text(self, title=plain(f"models: {machine}{note}" + (f" · {total}" if total else "")))
        self.set_class(stale, "-stale")
        if only is not None and by_id is not None:
            return self.apply_rows(self.rows_for(only, by_id), only)
        return self.refresh_rows()

    def rows_for(self, keys: Collection[str], by_id: Mapping[str, ModelInfo]) -> dict[str, Row]:
        """desired_rows, for these models only (one missing or filtered out has no row)."""
        w, narrow, g, act = self.id_width, self.narrow, self.glyphs, self.activity
        return {
            k: self.cells(m, g, w, narrow, act=act.get(k), why=self.notes.get(k, ""))
            for k in keys
            if (m := by_id.get(k)) is not None and matches(m, self.filter_text)
        }

    def desired_rows(self) -> dict[str, Row]:
        w, narrow, g = self.id_width, self.narrow, self.glyphs
        act = self.activity
        return {
            m.id: self.cells(m, g, w, narrow, act=act.get(m.id), why=self.notes.get(m.id, ""))
            for m in self.models
            if matches(m, self.filter_text)
        }

    def selected_model(self) -> str | None:
        return self.cursor_key()
