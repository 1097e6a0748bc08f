"""The fleet view: every model on every machine in one table, with a machine column and, beside the status, the
fit verdict of each model not running on its machine ("fits on": read down the column for a model's rows)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any, cast

from textual.timer import Timer

from app.services.activity.metrics import ModelActivity
from app.services.core.natural_order import natural_key
from app.services.core.router_types import ModelInfo
from app.services.core.textsafe import visible
from app.services.hosts.child_memory import ModelMemory
from app.ui.dashboard.column_fits import column_fits
from app.ui.dashboard.fleet_memory import MEMORY_EVERY, changed, memory_cell, read_memory
from app.ui.dashboard.model_table import MODEL_COLUMNS, KeyedTable, matches
from app.ui.text.format import BAD, BUSY, DIM, OK
from app.ui.text.glyphs import Glyphs
from app.ui.widgets.table_rows import CellSpec, Col, Row

if TYPE_CHECKING:
    from textual.worker import WorkType

    from app.ui.state.app_protocol import HerdApi

SEP = "\x1f"  # between machine and model in a row key; neither name can hold it
FIT_STYLE = {"fits": (OK, 0), "tight": (BUSY, 1), "no": (BAD, 2), "?": (DIM, 3)}


def fleet_key(machine: str, model: str) -> str:
    return f"{machine}{SEP}{model}"


class FleetTable(KeyedTable):
    def __init__(self, glyphs: Glyphs, **kw: Any) -> None:
        model, status, *rest = MODEL_COLUMNS
        cols = (Col("machine", "machine"), model, status, Col("fit", "fit"), Col("memory", "memory"), *rest)
        super().__init__(cols, glyphs, column_fits(cols, glyphs), **kw)
        self.memory: Mapping[str, Mapping[str, ModelMemory]] = {}
        """Per machine, per running model, its memory as last read (fleet_memory.py), while the view is shown."""
        self._memory_timer: Timer | None = None
        self.sources: dict[str, tuple[ModelInfo, ...]] = {}
        self.fits: dict[str, Mapping[str, str]] = {}
        self.down: frozenset[str] = frozenset()
        self.activity: Mapping[str, Mapping[str, ModelActivity]] = {}
        self.border_title = "fleet: every model on every machine"
        self._machine_text: dict[tuple[str, str], str] = {}

    def show(
        self,
        sources: Mapping[str, tuple[ModelInfo, ...]],
        down: frozenset[str] = frozenset(),
        fits: Mapping[str, Mapping[str, str]] | None = None,
        activity: Mapping[str, Mapping[str, ModelActivity]] | None = None,
        only: Collection[tuple[str, str]] | None = None,
        by_id: Mapping[str, Mapping[str, ModelInfo]] | None = None,
    ) -> None:
        """`fits`: per machine, per model not running, its verdict word (fits, tight, no, ?). `activity`: per
        machine, per loaded model, its last polled figures. `only` (with `by_id`, per machine its models by id):
        just these (machine, model) changed; honoured while which machines are down and the fit words are as
        before (a load changes the fit of every model of its machine)."""
        fits = dict(fits or {})
        partial = only is not None and by_id is not None and down == self.down and self.rows_now
        if partial and only is not None:
            # The rows whose fit word changed join the delta (fit_words hands back the same dict when none did).
            only = set(only)
            for machine, words in fits.items():
                old = self.fits.get(machine, {})
                if words is not old:
                    only.update((machine, k) for k in old.keys() | words.keys() if old.get(k) != words.get(k))
        self.sources = dict(sources)
        self.down = down
        self.fits = fits
        self.activity = activity or {}
        if partial and only is not None and by_id is not None:
            keys = [fleet_key(machine, model) for machine, model in only]
            rows = {}
            shape = self._shape()
            for machine, model in only:
                m = by_id.get(machine, {}).get(model)
                key = fleet_key(machine, model)
                row = self._row(key, machine, m, *shape) if m is not None else None
                if row is not None:
                    rows[key] = row
            self.apply_rows(rows, keys)
            return
        self.refresh_rows()

    def _shape(self) -> tuple[int, bool, Glyphs]:
        return max(8, self.id_width - 10), self.narrow, self.glyphs  # the size is asked once, not per row

    def _row(self, key: str, machine: str, m: ModelInfo, w: int, narrow: bool, g: Glyphs) -> Row | None:
        low_machine = self._lower(machine)
        if not (matches(m, self.filter_text) or self.filter_text.lower() in low_machine):
            return None
        shown = self._shown(machine, g)
        style = DIM if machine in self.down else ""
        acts = {} if machine in self.down else self.activity.get(machine, {})
        model, status, *rest = self.cells(m, g, w, narrow, key, acts.get(m.id))
        low = model.sort  # the id's natural key (model_cells)
        # Sorted by machine, a machine's models keep the order of their ids.
        mcell = CellSpec(shown, style, (natural_key(machine), low))
        word = self.fits.get(machine, {}).get(m.id, "")
        fit_style, rank = FIT_STYLE.get(word, ("", 4))
        mem = memory_cell(None if machine in self.down else self.memory.get(machine, {}).get(m.id))
        return (mcell, model, status, CellSpec(word, fit_style, (rank, low)), mem, *rest)

    def _lower(self, machine: str) -> str:
        return self._machine_text.setdefault(("lower", machine), machine.lower())

    def _shown(self, machine: str, g: Glyphs) -> str:
        """A machine's name as its cells show it: one string per machine, not per row."""
        return self._machine_text.setdefault(("shown", machine), g.clip(visible(machine), 14))

    def desired_rows(self) -> dict[str, Row]:
        out: dict[str, Row] = {}
        shape = self._shape()
        self._machine_text.clear()
        for machine, models in self.sources.items():
            for m in models:
                key = fleet_key(machine, m.id)
                row = self._row(key, machine, m, *shape)
                if row is not None:
                    out[key] = row
        return out

    # ---- the memory column: read while the view is shown ----

    def on_show(self) -> None:
        if self._memory_timer is None:
            self._memory_timer = self.set_interval(MEMORY_EVERY, self._ask_memory)
            self._ask_memory()

    def on_hide(self) -> None:
        if self._memory_timer is not None:
            self._memory_timer.stop()
            self._memory_timer = None

    @property
    def reading_memory(self) -> bool:
        """Whether the memory column is read again every MEMORY_EVERY seconds (while the view is shown)."""
        return self._memory_timer is not None

    def _ask_memory(self) -> None:
        # the function, not a coroutine: a worker cancelled before it ran leaves nothing unawaited
        work = cast("WorkType[None]", self._read_memory)
        self.run_worker(work, group="fleet-memory", exclusive=True, exit_on_error=False)

    async def _read_memory(self) -> None:
        herd = cast("HerdApi", self.app)
        new = await read_memory(herd.fleet, herd.state)
        rows = changed(self.memory, new)
        self.memory = new
        if not rows or not self.rows_now:
            return
        shape = self._shape()
        keys = [fleet_key(machine, model) for machine, model in rows]
        out = {}
        for machine, model in rows:
            m = herd.state.get(machine).by_id.get(model)
            row = self._row(fleet_key(machine, model), machine, m, *shape) if m is not None else None
            if row is not None:
                out[fleet_key(machine, model)] = row
        self.apply_rows(out, [k for k in keys if k in self.rows_now or k in out])

    def selected(self) -> tuple[str, str] | None:
        key = self.cursor_key()
        if key is None or SEP not in key:
            return None
        machine, model = key.split(SEP, 1)
        return machine, model
