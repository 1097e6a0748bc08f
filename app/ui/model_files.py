"""A machine's model files: every `*.gguf` in its models_dirs, what each one is, and adding a model to the preset.

Everything goes through the Fleet (listing the files, reading headers for the new section, reading, planning and
writing the preset); this screen only turns a discovered model into an `add_section` edit and shows its diff.

Projectors and draft heads are listed (files on a disk are managed here) but are not offered as models: a server
started on one cannot load it (router-lessons, "Pictures"). A model split in parts is one row; one with parts
missing is marked and cannot be added, since the server would fail to load it.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import ContentSwitcher, DataTable, Footer, Input, Static

from app.config import Config
from app.services.discovery import DiscoveredModel, Discovery
from app.services.errors import HerdError, PresetError, RouterError
from app.services.preset_store import (
    Edit,
    PresetConflict,
    PresetPlan,
    PresetResult,
    PresetSnapshot,
    add_section,
)
from app.services.types import FileInfo
from app.ui.format import BAD, BUSY, DIM, IDLE, OK, human_bytes
from app.ui.preset_form import diff_text
from app.ui.preset_outcome import conflict_head, not_reloaded, summary

NO_DIRS = "no models_dirs in config.toml for this machine"
_SHARD = re.compile(r"-(\d{5})-of-(\d{5})\.gguf$", re.IGNORECASE)
GROUP = "model-files"


@runtime_checkable
class ModelFilesFleet(Protocol):
    """What the files screen needs of app.services.fleet.Fleet."""

    @property
    def config(self) -> Config: ...

    async def discover_models(self, machine: str) -> Discovery: ...

    async def new_section(self, machine: str, model: DiscoveredModel) -> dict[str, str]: ...

    async def read_preset(self, machine: str) -> PresetSnapshot: ...

    async def preset_known_keys(self, machine: str) -> frozenset[str]: ...

    async def plan_preset(self, machine: str, edit: Edit, snapshot: PresetSnapshot | None = None) -> PresetPlan: ...

    async def apply_preset(self, machine: str, plan: PresetPlan) -> PresetResult: ...


@dataclass(frozen=True)
class FileRow:
    """One row of the table: a model (every part of it), a projector or a draft head."""

    key: str
    path: str  # the file shown: a model's first part
    size: int
    role: Text
    section: Text
    beside: Text
    model: DiscoveredModel | None = None
    why_not: str = ""  # why it cannot be added; "" for a model that can

    @property
    def addable(self) -> bool:
        return self.model is not None and not self.why_not


def base_dir(files: Iterable[FileInfo]) -> str:
    """The directory every listed file is under: paths in the table are shown relative to it."""
    dirs = [posixpath.dirname(f.path) for f in files]
    if not dirs:
        return ""
    try:
        return posixpath.commonpath(dirs)
    except ValueError:  # absolute and relative paths mixed
        return ""


def shown_path(path: str, base: str) -> str:
    return posixpath.relpath(path, base) if base and path.startswith(base.rstrip("/") + "/") else path


def parts_total(model: DiscoveredModel) -> int:
    """How many parts the first part's name says the model has (1 for a single file)."""
    m = _SHARD.search(posixpath.basename(model.path))
    return int(m.group(2)) if m else 1


def preset_sections(snapshot: PresetSnapshot | None) -> tuple[frozenset[str], dict[str, list[str]]]:
    """Section names of the preset, and for each `model = path` the sections that load that file."""
    if snapshot is None:
        return frozenset(), {}
    doc = snapshot.doc
    names = doc.section_names()
    by_path: dict[str, list[str]] = {}
    for name in names:
        path = (doc.get(name) or {}).get("model")
        if path:
            by_path.setdefault(path, []).append(name)
    return frozenset(names), by_path


def file_rows(discovery: Discovery, snapshot: PresetSnapshot | None) -> list[FileRow]:
    """The table's rows: each model, then beside it its projectors and draft heads, ordered by directory."""
    names, by_path = preset_sections(snapshot)
    models = discovery.models

    def users(path: str, kind: str) -> list[str]:
        if kind == "projector":
            return [m.name for m in models if m.mmproj == path or path in m.mmproj_candidates]
        return [m.name for m in models if m.draft == path]

    rows: list[tuple[tuple[str, int, str], FileRow]] = []
    for m in models:
        rows.append(((posixpath.dirname(m.path), 0, m.path), _model_row(m, names, by_path)))
    for kind, files in (("projector", discovery.projectors), ("draft", discovery.drafts)):
        for f in files:
            row = _companion_row(f, kind, users(f.path, kind))
            rows.append(((posixpath.dirname(f.path), 1 if kind == "projector" else 2, f.path), row))
    covered = {p for m in models for p in m.parts} | {f.path for f in (*discovery.projectors, *discovery.drafts)}
    for f in discovery.files:
        if f.path not in covered:  # nothing the grouping placed: shown as it is, never offered
            why = f"{posixpath.basename(f.path)} is not a model file llamaherd recognises."
            row = FileRow(f"file:{f.path}", f.path, f.size, Text("other", style=DIM), Text(), Text(), why_not=why)
            rows.append(((posixpath.dirname(f.path), 3, f.path), row))
    return [row for _, row in sorted(rows, key=lambda r: r[0])]


def _model_row(m: DiscoveredModel, names: frozenset[str], by_path: dict[str, list[str]]) -> FileRow:
    total = parts_total(m)
    why = ""
    if not m.complete:
        role = Text(f"model, {len(m.parts)} of {total} parts, incomplete", style=f"bold {BAD}")
        why = (
            f"{m.name} is missing parts ({len(m.parts)} of {total} found): "
            "the server cannot load it until every part is there."
        )
    elif len(m.parts) > 1:
        role = Text(f"model, {len(m.parts)} parts", style="bold")
    else:
        role = Text("model", style="bold")
    section = Text(m.name)
    if m.name in names:
        section.append("  in preset", style=OK)
    else:
        others = [s for s in by_path.get(m.path, []) if s != m.name]
        if others:
            section.append(f"  in preset as {', '.join(f'[{s}]' for s in others)}", style=IDLE)
    beside = Text()
    if m.mmproj:
        beside.append("projector ", style=DIM)
        beside.append(posixpath.basename(m.mmproj))
        if m.mmproj_candidates:
            beside.append(f" (1 of {len(m.mmproj_candidates)})", style=DIM)
    if m.draft:
        if beside:
            beside.append(", ", style=DIM)
        beside.append("draft ", style=DIM)
        beside.append(posixpath.basename(m.draft))
    return FileRow(f"model:{m.path}", m.path, m.size, role, section, beside, model=m, why_not=why)


def _companion_row(f: FileInfo, kind: str, with_models: list[str]) -> FileRow:
    name = posixpath.basename(f.path)
    listed = ", ".join(with_models)
    if kind == "projector":
        role = Text("projector", style=IDLE)
        beside = Text(f"with {listed}") if with_models else Text("no model beside it", style=DIM)
        why = (
            f"{name} is a projector: it is loaded with {listed} (its mmproj), not as a model of its own."
            if with_models
            else f"{name} is a projector, not a model: a server started on it cannot load it."
        )
    else:
        role = Text("draft head", style=IDLE)
        beside = Text(f"draft for {listed}") if with_models else Text("no model beside it", style=DIM)
        why = (
            f"{name} is a draft head: it speeds up {listed} (its model-draft), not a model of its own."
            if with_models
            else f"{name} is a draft head, not a model: it drafts for a model beside it."
        )
    return FileRow(f"file:{f.path}", f.path, f.size, role, Text("-", style=DIM), beside, why_not=why)


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
    ModelFilesScreen #mf-review { height: 1fr; padding: 0 1; }
    ModelFilesScreen #mf-review-head { height: auto; margin-bottom: 1; }
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
        self.mode = "loading"  # loading | files | empty | naming | review | conflict
        self.busy = False
        self._error_row: str | None = None  # the row a refusal was about: moving off it clears the refusal

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
            with VerticalScroll(id="mf-review"):
                yield Static(id="mf-review-head")
                yield Static(id="mf-diff")
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
        return t

    def on_mount(self) -> None:
        table = self.table
        table.add_column("File", key="file")
        table.add_column("Size", key="size")
        table.add_column("Role", key="role")
        table.add_column("Section", key="section")
        table.add_column("With", key="with")
        table.display = False
        for wid in ("#mf-warning", "#mf-error", "#mf-hint", "#mf-naming"):
            self.query_one(wid).display = False
        self.load()

    # ---- reading ----

    @work(exclusive=True, group=GROUP)
    async def load(self) -> None:
        keep = self.current_row()  # a rescan keeps the cursor on the same file
        self._set_mode("loading")
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
        warnings = []
        try:
            self.snapshot = await self.fleet.read_preset(self.machine)
        except HerdError as e:
            self.snapshot = None
            warnings.append(f"Cannot read the preset of {self.machine}: {e}")
        if self.snapshot is not None:
            try:
                self.known = await self.fleet.preset_known_keys(self.machine)
            except HerdError as e:
                self.known = None
                warnings.append(f"Keys are not checked against this llama-server's options: {e}")
        self._show_warning("\n".join(warnings))
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
                shown_path(r.path, base),
                Text(human_bytes(r.size), justify="right"),
                r.role,
                r.section,
                r.beside,
                key=r.key,
            )
        self.query_one("#mf-empty").display = False
        table.display = True
        if keep is not None and keep in self.rows:
            table.move_cursor(row=table.get_row_index(keep), animate=False)
        self._set_mode("files")
        table.focus()
        self._show_hint()

    def _show_empty(self, message: str) -> None:
        empty = self.query_one("#mf-empty", Static)
        empty.update(Text(message, style=BUSY))
        empty.display = True
        self.table.display = False
        self.query_one("#mf-hint").display = False
        self._set_mode("empty")

    # ---- state ----

    def _set_mode(self, mode: str) -> None:
        self.mode = mode
        self.refresh_bindings()

    def current_row(self) -> FileRow | None:
        table = self.table
        if self.mode not in ("files", "naming") or not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return self.rows.get(key or "")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("add", "add_as"):
            return self.mode == "files"
        if action == "rescan":
            return self.mode in ("files", "empty")
        if action == "write":
            return self.mode == "review"
        if action == "close":
            return self.mode in ("loading", "files", "empty")
        if action == "back":
            return self.mode in ("naming", "review", "conflict")
        return True

    def _show_error(self, message: str | Text, style: str = BAD) -> None:
        row = self.current_row() if message else None
        self._error_row = row.key if row else None
        error = self.query_one("#mf-error", Static)
        error.update(message if isinstance(message, Text) else Text(message, style=style))
        error.display = bool(message)

    def _show_warning(self, message: str) -> None:
        warning = self.query_one("#mf-warning", Static)
        warning.update(Text(message))
        warning.display = bool(message)

    def _show_hint(self) -> None:
        hint = self.query_one("#mf-hint", Static)
        row = self.current_row()
        if row is None:
            hint.display = False
            return
        if row.why_not:
            text = Text(row.why_not)
        else:
            assert row.model is not None
            name = row.model.name
            names, _ = preset_sections(self.snapshot)
            if name in names:
                text = Text(f"[{name}] is already in the preset; n adds this file under another name.")
            else:
                text = Text(f"a or enter adds [{name}] to the preset; n adds it under another name.")
        hint.update(text)
        hint.display = True

    @on(DataTable.RowHighlighted, "#mf-table")
    def _row_moved(self) -> None:
        row = self.current_row()
        if self._error_row is not None and (row is None or row.key != self._error_row):
            self._show_error("")
        self._show_hint()

    # ---- adding ----

    @on(DataTable.RowSelected, "#mf-table")
    def _row_chosen(self) -> None:
        self.action_add()

    def _model_to_add(self) -> DiscoveredModel | None:
        """The model under the cursor when it can be added now; otherwise None (saying why when it cannot)."""
        if self.mode != "files" or self.busy:
            return None
        row = self.current_row()
        if row is None:
            return None
        if not row.addable or row.model is None:
            self._show_error(f"Cannot add: {row.why_not}", style=BUSY)
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
        self._set_mode("naming")
        name.focus()

    @on(Input.Submitted, "#mf-name")
    def _name_given(self, event: Input.Submitted) -> None:
        model = self.naming_model
        if self.mode != "naming" or model is None or self.busy:
            return
        name = event.value.strip()
        if not name:
            self._show_error("Not added: a section name is needed.")
            return
        self._end_naming()
        self.add(model, name)

    def _end_naming(self) -> None:
        self.naming_model = None
        self.query_one("#mf-naming").display = False
        self._set_mode("files")
        self.table.focus()

    @work(exclusive=True, group=GROUP)
    async def add(self, model: DiscoveredModel, name: str) -> None:
        """Plan `[name]` for the model against the file as it is now, then show the diff."""
        self.busy = True
        self._show_error("")
        try:
            section = await self.fleet.new_section(self.machine, model)
            edit = add_section(name, section, self.known)
            plan = await self.fleet.plan_preset(self.machine, edit)  # read afresh: the refusal is the file's
        except PresetError as e:
            self._show_error(f"Not added: {_ui_words(str(e))} Nothing was written.")
            await self._reread_preset()
            return
        except HerdError as e:
            self._show_error(f"Not added: {e}")
            return
        finally:
            self.busy = False
        self.snapshot = plan.snapshot
        if plan.no_change:
            self._show_error("Nothing to add: the file would be the same; nothing is written.", style=BUSY)
            return
        self.plan = plan
        self.section = name
        self._to_review(self._review_head(plan), plan.diff, "review")

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
                table.update_cell(r.key, "section", r.section)
        self._show_hint()

    def _review_head(self, plan: PresetPlan) -> Text:
        head = Text.assemble(("Add ", "bold"), (f"[{self.section}]", "bold"), (f" to {plan.snapshot.path}?\n", "bold"))
        if not plan.router_running:
            head.append("The router is not running: it reads the file when it starts.\n", style=DIM)
        elif plan.will_unload:
            head.append(f"The router reloads; that unloads: {', '.join(plan.will_unload)}\n", style=BUSY)
        else:
            head.append("The router reloads; no loaded model is affected.\n", style=OK)
        head.append("enter writes, escape goes back to the files.", style=DIM)
        return head

    def _to_review(self, head: Text, diff: str, mode: str) -> None:
        self.query_one("#mf-review-head", Static).update(head)
        self.query_one("#mf-diff", Static).update(diff_text(diff))
        self.query_one("#mf-switcher", ContentSwitcher).current = "mf-review"
        review = self.query_one("#mf-review", VerticalScroll)
        review.scroll_home(animate=False)
        review.focus()
        self._set_mode(mode)

    def _to_files(self) -> None:
        self.plan = None
        self.query_one("#mf-switcher", ContentSwitcher).current = "mf-files"
        self._set_mode("files")
        self.table.focus()
        self._show_hint()

    def action_write(self) -> None:
        if self.mode == "review" and self.plan is not None and not self.busy:
            self.write(self.plan)

    @work(exclusive=True, group=GROUP)
    async def write(self, plan: PresetPlan) -> None:
        self.busy = True
        try:
            result = await self.fleet.apply_preset(self.machine, plan)
        except PresetConflict as e:
            head = conflict_head(("escape", "goes back to the files; adding again reads the file afresh"))
            self._to_review(head, e.diff, "conflict")
            return
        except RouterError as e:
            self.app.notify(
                not_reloaded(f"Added [{self.section}] to {plan.snapshot.path}", e),
                title=f"preset of {self.machine}",
                severity="warning",
            )
            self.dismiss(None)
            return
        except HerdError as e:
            self._show_error(f"Not written: {e}")
            return
        finally:
            self.busy = False
        self.app.notify(self.summary(result), title=f"preset of {self.machine}")
        self.dismiss(result)

    def summary(self, result: PresetResult) -> str:
        return summary(f"Added [{self.section}] to {result.plan.snapshot.path}", result)

    # ---- leaving ----

    def action_back(self) -> None:
        if self.busy:
            return
        if self.mode == "naming":
            self._end_naming()
            self._show_hint()
        elif self.mode in ("review", "conflict"):
            conflict = self.mode == "conflict"
            self._to_files()
            if conflict:
                self.run_worker(self._reread_preset(), group=GROUP, exclusive=True)

    def action_close(self) -> None:
        if self.mode in ("loading", "files", "empty"):
            self.workers.cancel_group(self, GROUP)
            self.dismiss(None)

    def action_rescan(self) -> None:
        if self.mode in ("files", "empty") and not self.busy:
            self._show_error("")
            self.load()


def _ui_words(message: str) -> str:
    """A service refusal in this screen's words: its `--name` is the command line's; here it is `n`."""
    return message.replace("choose another name with --name", "n adds it under another name") + (
        "" if message.endswith(".") else "."
    )
