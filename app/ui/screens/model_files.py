"""A machine's model files: every `*.gguf` in its models_dirs, what each one is, and adding a model to the preset.

Everything goes through the Fleet (listing the files, reading headers for the new section, reading, planning and
writing the preset); this screen only turns a discovered model into an `add_section` edit and shows its diff.

Projectors and draft heads are listed (files on a disk are managed here) but are not offered as models: a server
started on one cannot load it (router-lessons, "Pictures"). A model split in parts is one row; one with parts
missing is marked and cannot be added, since the server would fail to load it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import ClassVar, Protocol, runtime_checkable

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import ContentSwitcher, DataTable, Footer, Input, Static

from app.config import Config
from app.services.core.errors import HerdError, PresetError, SectionExists
from app.services.files.discovery import DiscoveredModel, Discovery
from app.services.fit.estimate import FitEstimate
from app.services.fit.preview import file_line
from app.services.presets.store import PresetConflict, PresetPlan, PresetResult, PresetSnapshot, add_section
from app.ui.screens.model_file_fit import estimate_text, host_stats
from app.ui.screens.model_file_rows import FileRow, base_dir, file_rows, row_hint, shown_path
from app.ui.screens.preset_review import PresetReview, add_head
from app.ui.screens.preset_write import PresetFleet, conflict_head, known_keys, write_preset
from app.ui.text.format import BAD, BUSY, DIM, human_bytes
from app.ui.text.plain_text import plain, safe_text

NO_DIRS = "no models_dirs in config.toml for this machine"
GROUP = "model-files"


class FilesMode(StrEnum):
    LOADING = "loading"
    FILES = "files"
    EMPTY = "empty"
    NAMING = "naming"
    REVIEW = "review"
    CONFLICT = "conflict"


_ENABLED: dict[str, frozenset[FilesMode]] = {
    "add": frozenset({FilesMode.FILES}),
    "add_as": frozenset({FilesMode.FILES}),
    "rescan": frozenset({FilesMode.FILES, FilesMode.EMPTY}),
    "write": frozenset({FilesMode.REVIEW}),
    "close": frozenset({FilesMode.LOADING, FilesMode.FILES, FilesMode.EMPTY}),
    "back": frozenset({FilesMode.NAMING, FilesMode.REVIEW, FilesMode.CONFLICT}),
}
"""The modes in which each of the screen's actions applies (an action not listed applies in every mode)."""


@runtime_checkable
class ModelFilesFleet(PresetFleet, Protocol):
    """What the files screen needs of app.services.fleet.Fleet: the editor's needs, and the files."""

    @property
    def config(self) -> Config: ...

    async def discover_models(self, machine: str) -> Discovery: ...

    async def new_section(self, machine: str, model: DiscoveredModel) -> dict[str, str]: ...

    async def file_estimate(self, machine: str, model: DiscoveredModel, has_gpu: bool) -> FitEstimate: ...


class ModelFilesScreen(ModalScreen[PresetResult | None]):
    """The `*.gguf` files of one machine's models_dirs; `a` adds the model under the cursor to the preset.

    Dismisses with the PresetResult of a write, or None when closed. Modal and opaque like the preset editor, so
    the dashboard's one-letter keys do not act behind it.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "add", "Add", id="model_files_add"),
        Binding("n", "add_as", "Add as", id="model_files_add_as"),
        Binding("r", "rescan", "Rescan", id="model_files_rescan"),
        Binding("enter", "write", "Write", id="model_files_write"),
        Binding("escape", "close", "Close", id="model_files_close"),
        Binding("escape", "back", "Back", id="model_files_back"),
    ]

    DEFAULT_CSS = """
    ModelFilesScreen { layout: vertical; background: $background; }
    ModelFilesScreen #mf-title { height: auto; padding: 0 1; background: $boost; }
    ModelFilesScreen #mf-warning { height: auto; padding: 0 1; color: $warning; }
    ModelFilesScreen #mf-error { height: auto; padding: 0 1; }
    ModelFilesScreen #mf-switcher { height: 1fr; }
    ModelFilesScreen #mf-files { height: 1fr; }
    ModelFilesScreen #mf-table { height: 1fr; }
    ModelFilesScreen #mf-empty { height: auto; padding: 1 1; }
    ModelFilesScreen #mf-hint { height: auto; padding: 0 1; color: $text-muted; }
    ModelFilesScreen #mf-naming { height: 1; padding: 0 1; }
    ModelFilesScreen #mf-naming-label { width: auto; }
    ModelFilesScreen #mf-name { width: 1fr; }
    """

    def __init__(self, fleet: ModelFilesFleet, machine: str) -> None:
        super().__init__()
        self.fleet = fleet
        self.machine = machine
        self.dirs: tuple[str, ...] = ()
        self.discovery: Discovery | None = None
        self.snapshot: PresetSnapshot | None = None
        self.known: frozenset[str] | None = None
        self.rows: dict[str, FileRow] = {}
        self.plan: PresetPlan | None = None
        self.section = ""  # the section being added
        self.naming_model: DiscoveredModel | None = None
        self.mode = FilesMode.LOADING
        self.busy = False
        self._error_row: str | None = None  # the row a refusal was about: moving off it clears the refusal
        self.estimates: dict[str, str] = {}  # row key -> the estimate's line (or why there is none)

    # ---- layout ----

    def compose(self) -> ComposeResult:
        yield Static(self._title(), id="mf-title")
        yield Static(id="mf-warning")
        yield Static(id="mf-error")
        with ContentSwitcher(initial="mf-files", id="mf-switcher"):
            with Vertical(id="mf-files"):
                yield Static(Text("listing files…", style=DIM), id="mf-empty")
                yield DataTable(cursor_type="row", zebra_stripes=True, id="mf-table")
                yield Static(id="mf-hint")
                with Horizontal(id="mf-naming"):
                    yield Static("Add as section (enter adds, escape cancels): ", id="mf-naming-label")
                    yield Input(placeholder="section name", compact=True, id="mf-name")
            yield PresetReview(id="mf-review")
        yield Footer()

    @property
    def table(self) -> DataTable[Text | str]:
        return self.query_one("#mf-table", DataTable)

    def _title(self) -> Text:
        t = Text.assemble(("Model files on ", "bold"), (self.machine, "bold"))
        if self.dirs:
            t.append(f"  {', '.join(self.dirs)}", style=DIM)
        if self.snapshot is not None:
            t.append("\npreset ", style=DIM)
            t.append(self.snapshot.path, style=DIM)
        return safe_text(t, multiline=True)

    def on_mount(self) -> None:
        table = self.table
        for label in ("File", "Size", "Role", "Section", "In preset", "With"):
            table.add_column(label, key=label.lower())
        table.display = False
        for wid in ("#mf-warning", "#mf-error", "#mf-hint", "#mf-naming"):
            self.query_one(wid).display = False
        self.load()

    # ---- reading ----

    @work(exclusive=True, group=GROUP, exit_on_error=False)  # a failure is a message, the dashboard stays up
    async def load(self) -> None:
        keep = self.current_row()  # a rescan keeps the cursor on the same file
        self._set_mode(FilesMode.LOADING)
        try:
            self.dirs = tuple(self.fleet.config.machine(self.machine).models_dirs)
        except HerdError as e:
            self._show_empty(str(e))
            return
        if not self.dirs:
            self._show_empty(NO_DIRS)
            return
        try:
            discovery = await self.fleet.discover_models(self.machine)
        except HerdError as e:
            self._show_empty(f"Cannot list the files of {self.machine}: {e}")
            return
        warning = ""
        try:
            self.snapshot = await self.fleet.read_preset(self.machine)
        except HerdError as e:
            self.snapshot = None
            warning = f"Cannot read the preset of {self.machine}: {e}"
        if self.snapshot is not None:
            self.known, warning = await known_keys(self.fleet, self.machine)
        self._show_warning(warning)
        self.discovery = discovery
        self._fill(keep=keep.key if keep else None)

    def _fill(self, keep: str | None = None) -> None:
        """(Re)build the table from the discovery and the preset snapshot, the cursor on `keep` if given."""
        self.query_one("#mf-title", Static).update(self._title())
        discovery = self.discovery
        if discovery is None:
            return
        if not discovery.files:
            self._show_empty(f"No *.gguf files in {', '.join(self.dirs)} on {self.machine}.")
            return
        rows = file_rows(discovery, self.snapshot)
        self.rows = {r.key: r for r in rows}
        base = base_dir(discovery.files)
        table = self.table
        table.clear()
        for r in rows:
            table.add_row(
                plain(shown_path(r.path, base)),  # a str cell would be parsed as markup
                Text(human_bytes(r.size), justify="right"),
                safe_text(r.role),
                safe_text(r.section),
                safe_text(r.in_preset),
                safe_text(r.beside),
                key=r.key,
            )
        self.query_one("#mf-empty").display = False
        table.display = True
        if keep is not None and keep in self.rows:
            table.move_cursor(row=table.get_row_index(keep), animate=False)
        self._set_mode(FilesMode.FILES)
        table.focus()
        self._show_hint()

    def _show_empty(self, message: str) -> None:
        empty = self.query_one("#mf-empty", Static)
        empty.update(Text(message, style=BUSY))
        empty.display = True
        self.table.display = False
        self.query_one("#mf-hint").display = False
        self._set_mode(FilesMode.EMPTY)

    # ---- state ----

    def _set_mode(self, mode: FilesMode) -> None:
        self.mode = mode
        self.refresh_bindings()

    def current_row(self) -> FileRow | None:
        table = self.table
        if self.mode not in (FilesMode.FILES, FilesMode.NAMING) or not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return self.rows.get(key or "")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        modes = _ENABLED.get(action)
        return True if modes is None else self.mode in modes

    def show_error(self, message: str | Text, style: str = BAD) -> None:
        row = self.current_row() if message else None
        self._error_row = row.key if row else None
        error = self.query_one("#mf-error", Static)
        error.update(
            safe_text(message, multiline=True) if isinstance(message, Text) else plain(message, style, multiline=True)
        )
        error.display = bool(message)

    def _show_warning(self, message: str) -> None:
        warning = self.query_one("#mf-warning", Static)
        warning.update(plain(message, multiline=True))
        warning.display = bool(message)

    def _show_hint(self) -> None:
        hint = self.query_one("#mf-hint", Static)
        row = self.current_row()
        if row is None:
            hint.display = False
            return
        text = row_hint(row, self.snapshot)
        if row.model is not None:
            text += "\n" + estimate_text(self.estimates.get(row.key))
            if row.key not in self.estimates:
                self._estimate(row.key, row.model)
        hint.update(plain(text, multiline=True))
        hint.display = True

    @work(exclusive=True, group="model-files-fit", exit_on_error=False)  # the header read: off the UI's path
    async def _estimate(self, key: str, model: DiscoveredModel) -> None:
        stats = host_stats(self.app, self.machine)
        try:
            est = await self.fleet.file_estimate(self.machine, model, bool(stats and stats.gpus))
            self.estimates[key] = file_line(self.machine, est, stats)
        except HerdError as e:
            self.estimates[key] = f"estimate unknown: {e}"
        self._show_hint()

    @on(DataTable.RowHighlighted, "#mf-table")
    def _row_moved(self) -> None:
        row = self.current_row()
        if self._error_row is not None and (row is None or row.key != self._error_row):
            self.show_error("")
        self._show_hint()

    # ---- adding ----

    @on(DataTable.RowSelected, "#mf-table")
    def _row_chosen(self) -> None:
        self.action_add()

    def _model_to_add(self) -> DiscoveredModel | None:
        """The model under the cursor when it can be added now; otherwise None (saying why when it cannot)."""
        if self.mode is not FilesMode.FILES or self.busy:
            return None
        row = self.current_row()
        if row is None:
            return None
        if not row.addable or row.model is None:
            self.show_error(f"Cannot add: {row.why_not}", style=BUSY)
            return None
        return row.model

    def action_add(self) -> None:
        model = self._model_to_add()
        if model is not None:
            self.add(model, model.name)

    def action_add_as(self) -> None:
        model = self._model_to_add()
        if model is None:
            return
        self.naming_model = model
        self.query_one("#mf-naming").display = True
        name = self.query_one("#mf-name", Input)
        name.value = model.name
        name.cursor_position = len(name.value)
        self._set_mode(FilesMode.NAMING)
        name.focus()

    @on(Input.Submitted, "#mf-name")
    def _name_given(self, event: Input.Submitted) -> None:
        model = self.naming_model
        if self.mode is not FilesMode.NAMING or model is None or self.busy:
            return
        name = event.value.strip()
        if not name:
            self.show_error("Not added: a section name is needed.")
            return
        self._end_naming()
        self.add(model, name)

    def _end_naming(self) -> None:
        self.naming_model = None
        self.query_one("#mf-naming").display = False
        self._set_mode(FilesMode.FILES)
        self.table.focus()

    @work(exclusive=True, group=GROUP, exit_on_error=False)  # a failure is a message, the dashboard stays up
    async def add(self, model: DiscoveredModel, name: str) -> None:
        """Plan `[name]` for the model against the file as it is now, then show the diff."""
        self.busy = True
        self.show_error("")
        try:
            section = await self.fleet.new_section(self.machine, model)
            edit = add_section(name, section, self.known)
            plan = await self.fleet.plan_preset(self.machine, edit)  # read afresh: the refusal is the file's
        except PresetError as e:
            # the service's words, but for a name already taken: here another is given with n, not --name
            said = f"{e}; n adds it under another name" if isinstance(e, SectionExists) else str(e)
            self.show_error(f"Not added: {said.rstrip('.')}. Nothing was written.")
            await self._reread_preset()
            return
        except HerdError as e:
            self.show_error(f"Not added: {e}")
            return
        finally:
            self.busy = False
        self.snapshot = plan.snapshot
        if plan.no_change:
            self.show_error("Nothing to add: the file would be the same; nothing is written.", style=BUSY)
            return
        self.plan = plan
        self.section = name
        self._to_review(add_head(self.section, plan), plan.diff, FilesMode.REVIEW)

    async def _reread_preset(self) -> None:
        """After a refusal or a conflict, mark the sections as the preset has them now ("in preset")."""
        try:
            self.snapshot = await self.fleet.read_preset(self.machine)
        except HerdError:
            return
        self.query_one("#mf-title", Static).update(self._title())
        if self.discovery is None or not self.rows:
            return
        table = self.table
        for r in file_rows(self.discovery, self.snapshot):
            if r.key in self.rows:
                self.rows[r.key] = r
                table.update_cell(r.key, "section", safe_text(r.section))
                table.update_cell(r.key, "in preset", safe_text(r.in_preset))
        self._show_hint()

    def _to_review(self, head: Text, diff: str, mode: FilesMode) -> None:
        self.query_one("#mf-switcher", ContentSwitcher).current = "mf-review"
        self.query_one(PresetReview).show(head, diff)
        self._set_mode(mode)

    def _to_files(self) -> None:
        self.plan = None
        self.query_one("#mf-switcher", ContentSwitcher).current = "mf-files"
        self._set_mode(FilesMode.FILES)
        self.table.focus()
        self._show_hint()

    def action_write(self) -> None:
        if self.mode is FilesMode.REVIEW and self.plan is not None and not self.busy:
            self.write(self.plan)

    @work(exclusive=True, group=GROUP, exit_on_error=False)  # a failure is a message, the dashboard stays up
    async def write(self, plan: PresetPlan) -> None:
        await write_preset(self, plan, f"Added [{self.section}] to {plan.snapshot.path}")

    def show_conflict(self, conflict: PresetConflict) -> None:
        head = conflict_head(("escape", "goes back to the files; adding again reads the file afresh"))
        self._to_review(head, conflict.diff, FilesMode.CONFLICT)

    # ---- leaving ----

    def action_back(self) -> None:
        if self.busy:
            return
        if self.mode is FilesMode.NAMING:
            self._end_naming()
            self._show_hint()
        elif self.mode in (FilesMode.REVIEW, FilesMode.CONFLICT):
            conflict = self.mode is FilesMode.CONFLICT
            self._to_files()
            if conflict:
                self.run_worker(self._reread_preset(), group=GROUP, exclusive=True)

    def action_close(self) -> None:
        if self.mode in _ENABLED["close"]:
            self.workers.cancel_group(self, GROUP)
            self.dismiss(None)

    def action_rescan(self) -> None:
        if self.mode in _ENABLED["rescan"] and not self.busy:
            self.show_error("")
            self.load()
