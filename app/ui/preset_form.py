"""The preset editor: one section of a machine's preset file as a form, the diff before writing, then the write.

Everything goes through the Fleet (read, known keys, plan, apply); this screen only turns widgets into a section
mapping. Only the fields the operator changed are handed to `apply_form`, so an untouched field keeps its spelling
in the file (`fa = true` is not rewritten as `flash-attn = on` because someone edited the context size).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Protocol, runtime_checkable

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, ContentSwitcher, Footer, Input, Select, Static

from app.services.errors import HerdError, PresetError, RouterError
from app.services.preset_fields import (
    FIELDS,
    FIELDS_BY_KEY,
    PresetField,
    apply_form,
    field_for,
    read_form,
    validate_key,
    validate_mapping,
    validate_section_name,
    validate_value,
)
from app.services.preset_store import (
    Edit,
    PresetConflict,
    PresetPlan,
    PresetResult,
    PresetSnapshot,
)
from app.services.presets import GLOBAL_SECTION, PresetDoc, router_name
from app.ui.format import BAD, BUSY, DIM, OK
from app.ui.preset_outcome import conflict_head, not_reloaded, summary

GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Model files", ("model", "mmproj", "model-draft")),
    ("Context and slots", ("ctx-size", "parallel", "n-gpu-layers", "threads")),
    ("Speculative decoding", ("spec-type", "spec-draft-n-max")),
    ("KV cache and attention", ("cache-type-k", "cache-type-v", "flash-attn")),
    ("Chat template", ("jinja", "chat-template")),
    ("Names", ("alias", "tags")),
    ("Lifecycle", ("load-on-startup", "stop-timeout", "sleep-idle-seconds")),
)
"""Fields by group; within a group they keep the order of FIELDS. A field no group names lands in "Other fields"."""

MODEL_ONLY_KEYS = frozenset({"model", "mmproj", "model-draft"})
"""Meaningless in `[*]`: every model would get the same weights."""


@runtime_checkable
class PresetFleet(Protocol):
    """What the editor needs of app.services.fleet.Fleet."""

    async def read_preset(self, machine: str) -> PresetSnapshot: ...

    async def preset_known_keys(self, machine: str) -> frozenset[str]: ...

    async def plan_preset(self, machine: str, edit: Edit, snapshot: PresetSnapshot | None = None) -> PresetPlan: ...

    async def apply_preset(self, machine: str, plan: PresetPlan) -> PresetResult: ...


def grouped_fields(section: str) -> list[tuple[str, list[PresetField]]]:
    """(heading, fields) in display order; model-only fields left out of `[*]`."""
    placed: set[str] = set()
    out: list[tuple[str, list[PresetField]]] = []
    for heading, keys in GROUPS:
        fields = [f for f in FIELDS if f.key in keys]
        placed.update(f.key for f in fields)
        out.append((heading, fields))
    rest = [f for f in FIELDS if f.key not in placed]
    if rest:
        out.append(("Other fields", rest))
    if section == GLOBAL_SECTION:
        out = [(h, [f for f in fs if f.key not in MODEL_ONLY_KEYS]) for h, fs in out]
    return [(h, fs) for h, fs in out if fs]


def owned_by_form(key: str) -> bool:
    """Whether a key of the file is one of the form's fields (any spelling), so not a free row.

    The projector search keys (`no-mmproj`, `mmproj-auto`, ...) belong to the Projector field without being its
    spellings: `apply_form` clearing the projector removes exactly those, which is how they are told apart here.
    """
    return field_for(key) is not None or key not in apply_form({key: "x"}, {"mmproj": ""})


def section_edit(
    section: str, mapping: Mapping[str, str], current: Mapping[str, str], known: frozenset[str] | None
) -> Edit:
    """The edit that makes `section` exactly `mapping`, refused (PresetError) before anything is written.

    Like `preset_store.replace_section`, but a key whose value is exactly what the file has keeps it as written:
    validating normalises (`fa = true` would come back as `fa = on`), and a line nobody touched must not change.
    """
    validate_section_name(section)
    checked = validate_mapping(mapping, known)
    wanted = {k: (mapping[k] if mapping.get(k) == current.get(k) else v) for k, v in checked.items()}

    def edit(doc: PresetDoc) -> PresetDoc:
        return doc.replace_section(section, wanted)

    return edit


def diff_text(diff: str) -> Text:
    """A unified diff with added lines green and removed lines red."""
    out = Text()
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("+"):
            style = OK
        elif line.startswith("-"):
            style = BAD
        elif line.startswith("@@"):
            style = "cyan"
        else:
            style = ""
        out.append(line + "\n", style=style)
    return out


def widget_id(key: str) -> str:
    return f"field-{key}"


class FreeRow(Horizontal):
    """One key = value of the section that no field of the form covers."""

    DEFAULT_CSS = """
    FreeRow { height: 1; }
    FreeRow .free-key { width: 30; }
    FreeRow .free-eq { width: 3; color: $text-muted; }
    FreeRow .free-value { width: 1fr; }
    FreeRow Button { margin-left: 1; min-width: 8; }
    """

    def __init__(self, key: str = "", value: str = "") -> None:
        super().__init__(classes="free-row")
        self.key_input = Input(key, placeholder="key", compact=True, classes="free-key")
        self.value_input = Input(value, placeholder="value (blank: removed)", compact=True, classes="free-value")

    def compose(self) -> ComposeResult:
        yield self.key_input
        yield Static(" = ", classes="free-eq")
        yield self.value_input
        yield Button("remove", compact=True, classes="free-remove")


class PresetForm(ModalScreen[PresetResult | None]):
    """Edit one section (a model id, or `*` for the global section) of a machine's preset file.

    Dismisses with the PresetResult of a write, or None when cancelled. Modal (and opaque, so it looks like a
    screen of its own) because the dashboard's one-letter keys must not act while the editor is open: `s` or `x`
    in the diff view would otherwise start or stop a router behind it.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "save", "Save", id="preset_save"),
        Binding("ctrl+s,enter", "write", "Write", id="preset_write"),
        Binding("escape", "cancel", "Cancel", id="preset_cancel"),
        Binding("escape", "back", "Back", id="preset_back"),
        Binding("ctrl+n", "add_row", "Add key", id="preset_add_key"),
        Binding("ctrl+r", "remove_row", "Remove key", id="preset_remove_key"),
        Binding("r", "reload_form", "Reload form", id="preset_reload"),
    ]

    DEFAULT_CSS = """
    PresetForm { layout: vertical; background: $background; }
    PresetForm #pf-title { height: auto; padding: 0 1; background: $boost; }
    PresetForm #pf-warning { height: auto; padding: 0 1; color: $warning; }
    PresetForm #pf-error { height: auto; padding: 0 1; color: $error; }
    PresetForm #pf-switcher { height: 1fr; }
    PresetForm #pf-form { height: 1fr; padding: 0 1; }
    PresetForm .pf-group { margin-top: 1; text-style: bold; color: $accent; }
    PresetForm .pf-row { height: 1; }
    PresetForm .pf-label { width: 24; }
    PresetForm .pf-row Input, PresetForm .pf-row Select { width: 1fr; }
    PresetForm .pf-help { height: auto; padding-left: 24; color: $text-muted; }
    PresetForm #pf-free { height: auto; }
    PresetForm #pf-add { margin-top: 1; }
    PresetForm .pf-bad { background: $error 40%; }
    PresetForm #pf-review { height: 1fr; padding: 0 1; }
    PresetForm #pf-review-head { height: auto; margin-bottom: 1; }
    """

    def __init__(self, fleet: PresetFleet, machine: str, section: str) -> None:
        super().__init__()
        self.fleet = fleet
        self.machine = machine
        self.section = section
        """The section as the file spells it: the model id the router lists, unless the file writes its
        quantisation tag another way (`org/repo:q4_k_m` is listed as `org/repo:Q4_K_M`)."""
        self.groups = grouped_fields(section)
        self.fields: list[PresetField] = [f for _, fs in self.groups for f in fs]
        self.snapshot: PresetSnapshot | None = None
        self.known: frozenset[str] | None = None
        self.initial: dict[str, str] = {}
        self.current_keys: dict[str, str] = {}
        self.plan: PresetPlan | None = None
        self.conflict: PresetConflict | None = None
        self.mode = "loading"  # loading | form | review | conflict
        self.busy = False
        self._return_focus: Widget | None = None

    # ---- layout ----

    def compose(self) -> ComposeResult:
        yield Static(self._title(), id="pf-title")
        yield Static(id="pf-warning")
        yield Static(id="pf-error")
        with ContentSwitcher(initial="pf-form", id="pf-switcher"):
            with VerticalScroll(id="pf-form"):
                for heading, fields in self.groups:
                    yield Static(heading, classes="pf-group")
                    for field in fields:
                        with Horizontal(classes="pf-row"):
                            yield Static(field.label, classes="pf-label")
                            yield self._field_widget(field)
                        if field.help:
                            yield Static(field.help, classes="pf-help")
                yield Static("Other keys", classes="pf-group")
                yield Static(
                    "Any other llama-server option of this section, by its key without dashes.", classes="pf-help"
                )
                yield Vertical(id="pf-free")
                yield Button("+ add key (ctrl+n)", compact=True, id="pf-add")
            with VerticalScroll(id="pf-review"):
                yield Static(id="pf-review-head")
                yield Static(id="pf-diff")
        yield Footer()

    def _field_widget(self, field: PresetField) -> Widget:
        wid = widget_id(field.key)
        if field.kind == "bool":
            opts = [("true", "true"), ("false", "false")]
            return Select[str](opts, prompt=self._unset_prompt(field), compact=True, id=wid)
        if field.kind == "choice":
            opts = [(c, c) for c in field.choices]
            return Select[str](opts, prompt=self._unset_prompt(field), compact=True, id=wid)
        integer = field.kind == "int" and not field.words
        return Input(
            placeholder=field.default or "",
            type="integer" if integer else "text",
            compact=True,
            id=wid,
        )

    @staticmethod
    def _unset_prompt(field: PresetField) -> str:
        return f"unset (default: {field.default})" if field.default else "unset"

    def _title(self) -> Text:
        what = "[*] every model" if self.section == GLOBAL_SECTION else f"[{self.section}]"
        t = Text.assemble(("Preset ", "bold"), (what, "bold"), (" on ", ""), (self.machine, "bold"))
        if self.snapshot is not None:
            t.append(f"  {self.snapshot.path}", style=DIM)
            if not self.snapshot.exists:
                t.append("  (new file)", style=BUSY)
            elif self.snapshot.doc.get(self.section) is None:
                t.append("  (new section)", style=BUSY)
        else:
            t.append("  reading…", style=DIM)
        return t

    def on_mount(self) -> None:
        self.query_one("#pf-switcher").disabled = True
        self.query_one("#pf-warning").display = False
        self.query_one("#pf-error").display = False
        self.load()

    # ---- reading ----

    @work(exclusive=True, group="preset-form")
    async def load(self) -> None:
        self.mode = "loading"
        self.refresh_bindings()
        try:
            snapshot = await self.fleet.read_preset(self.machine)
        except HerdError as e:
            self._show_error(f"Cannot read the preset of {self.machine}: {e}")
            return
        warning = ""
        try:
            self.known = await self.fleet.preset_known_keys(self.machine)
        except HerdError as e:
            self.known = None
            warning = f"Keys are not checked against this llama-server's options: {e}"
        await self._fill(snapshot)
        self._show_warning(warning)

    async def _fill(self, snapshot: PresetSnapshot) -> None:
        self.snapshot = snapshot
        self.plan = None
        self.conflict = None
        doc = snapshot.doc
        if doc.get(self.section) is None:
            self.section = next((s for s in doc.section_names() if router_name(s) == self.section), self.section)
        self.current_keys = dict(doc.get(self.section) or {})
        self.initial = read_form(self.current_keys)
        inherited = read_form(doc.get(GLOBAL_SECTION) or {}) if self.section != GLOBAL_SECTION else {}
        for field in self.fields:
            widget = self.query_one(f"#{widget_id(field.key)}")
            value = self.initial[field.key]
            if field.kind == "choice" and value:
                # `fa = true` is shown as "on"; it stays as written unless this field is changed
                spellings = dict(field.spellings)
                value = ",".join(spellings.get(v.strip().lower(), v.strip()) for v in value.split(","))
                self.initial[field.key] = value
            from_global = inherited.get(field.key, "")
            if isinstance(widget, Input):
                widget.value = value
                widget.cursor_position = len(value)
                widget.placeholder = f"{from_global} (from [*])" if from_global else field.default or ""
            elif isinstance(widget, Select):
                widget.prompt = f"unset ({from_global} from [*])" if from_global else self._unset_prompt(field)
                offered = [(c, c) for c in (field.choices if field.kind == "choice" else ("true", "false"))]
                if value and value not in dict(offered):
                    offered.append((value, value))  # a value the file has that the form does not offer: kept
                widget.set_options(offered)
                if value:
                    widget.value = value
                else:
                    widget.clear()
        free = self.query_one("#pf-free", Vertical)
        await free.remove_children()
        rows = [FreeRow(k, v) for k, v in self.current_keys.items() if not owned_by_form(k)]
        if rows:
            await free.mount_all(rows)
        self.query_one("#pf-title", Static).update(self._title())
        self.query_one("#pf-switcher").disabled = False
        self._show_error("")
        self._to_form()
        first = self.query_one(f"#{widget_id(self.fields[0].key)}")
        first.focus()

    # ---- modes ----

    def _to_form(self) -> None:
        self.mode = "form"
        self.query_one("#pf-switcher", ContentSwitcher).current = "pf-form"
        if self._return_focus is not None and self._return_focus.is_mounted:
            self._return_focus.focus()
        self._return_focus = None
        self.refresh_bindings()

    def _to_review(self, head: Text, diff: str, mode: str) -> None:
        self.mode = mode
        self._return_focus = self.focused
        self.query_one("#pf-review-head", Static).update(head)
        self.query_one("#pf-diff", Static).update(diff_text(diff))
        self.query_one("#pf-switcher", ContentSwitcher).current = "pf-review"
        review = self.query_one("#pf-review", VerticalScroll)
        review.scroll_home(animate=False)
        review.focus()
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("save", "cancel", "add_row"):
            return self.mode in ("form", "loading") if action == "cancel" else self.mode == "form"
        if action == "remove_row":
            return self.mode == "form" and self._focused_row() is not None
        if action == "write":
            return self.mode == "review"
        if action == "back":
            return self.mode in ("review", "conflict")
        if action == "reload_form":
            return self.mode == "conflict"
        return True

    def _show_error(self, message: str, style: str = "") -> None:
        error = self.query_one("#pf-error", Static)
        error.update(Text(message, style=style))
        error.display = bool(message)

    def _show_warning(self, message: str) -> None:
        warning = self.query_one("#pf-warning", Static)
        warning.update(Text(message))
        warning.display = bool(message)

    # ---- building the section ----

    def _value_of(self, field: PresetField) -> str:
        widget = self.query_one(f"#{widget_id(field.key)}")
        if isinstance(widget, Input):
            return widget.value
        assert isinstance(widget, Select)
        return "" if widget.is_blank() else str(widget.value)

    def values(self) -> dict[str, str]:
        """Every field's value as the form shows it ("" = unset)."""
        return {f.key: self._value_of(f) for f in self.fields}

    def changed_values(self) -> dict[str, str]:
        """The form's fields whose value differs from what was read: only these are applied."""
        return {f.key: v for f in self.fields if (v := self._value_of(f)) != self.initial.get(f.key, "")}

    def _mark(self, widget: Widget | None) -> None:
        if widget is not None:
            widget.add_class("pf-bad")
            widget.focus()

    def _refuse(self, message: str, widget: Widget | None = None) -> None:
        self._show_error(f"Not saved: {message}")
        self._mark(widget)

    def build_mapping(self) -> dict[str, str] | None:
        """The section's new keys, or None after showing inline why they cannot be written."""
        for bad in self.query(".pf-bad"):
            bad.remove_class("pf-bad")
        changed = self.changed_values()
        for key, value in changed.items():
            try:
                validate_value(FIELDS_BY_KEY[key], value)
            except PresetError as e:
                self._refuse(str(e), self.query_one(f"#{widget_id(key)}"))
                return None
        try:
            owned = {k: v for k, v in self.current_keys.items() if owned_by_form(k)}
            mapping = apply_form(owned, changed)
        except PresetError as e:
            self._refuse(str(e), self._widget_named_in(str(e)))
            return None
        free: dict[str, str] = {}
        for row in self.query(FreeRow):
            key, value = row.key_input.value.strip(), row.value_input.value
            if not key and not value.strip():
                continue  # an empty row is no key
            try:
                if not key:
                    raise PresetError(f"a key is needed for the value {value.strip()!r}")
                validate_key(key, self.known)
                if owned_by_form(key):
                    field = field_for(key) or FIELDS_BY_KEY["mmproj"]
                    raise PresetError(f"key {key!r} is the field {field.label} above: set it there")
                if key in free:
                    raise PresetError(f"key {key!r} is given twice")
            except PresetError as e:
                self._refuse(str(e), row.key_input)
                return None
            try:
                free[key] = validate_value(key, value)
            except PresetError as e:
                self._refuse(f"{key}: {e}", row.value_input)
                return None
        return {**mapping, **{k: v for k, v in free.items() if v}}

    def _widget_named_in(self, message: str) -> Widget | None:
        """The field or free row a refusal names, to mark and focus it."""
        for field in self.fields:
            if message.startswith(f"{field.label} ({field.key})"):
                return self.query_one(f"#{widget_id(field.key)}")
        for row in self.query(FreeRow):
            if f"{row.key_input.value.strip()!r}" in message:
                return row.key_input
        return None

    # ---- actions ----

    def action_save(self) -> None:
        if self.mode != "form" or self.busy or self.snapshot is None:
            return
        mapping = self.build_mapping()
        if mapping is None:
            return
        if not mapping and self.snapshot.doc.get(self.section) is None:
            self._show_error("Nothing changed: the section is still empty.", style=BUSY)
            return
        try:
            edit = section_edit(self.section, mapping, self.current_keys, self.known)
        except PresetError as e:
            self._refuse(str(e), self._widget_named_in(str(e)))
            return
        self._show_error("")
        self.make_plan(edit)

    @work(exclusive=True, group="preset-form")
    async def make_plan(self, edit: Edit) -> None:
        self.busy = True
        try:
            plan = await self.fleet.plan_preset(self.machine, edit, self.snapshot)
        except HerdError as e:
            self._refuse(str(e))
            return
        finally:
            self.busy = False
        if plan.no_change:
            self._show_error("Nothing changed: the file would be the same; nothing is written.", style=BUSY)
            return
        self.plan = plan
        self._to_review(self._review_head(plan), plan.diff, "review")

    def _what(self) -> str:
        return f"[{self.section}]"

    def _review_head(self, plan: PresetPlan) -> Text:
        head = Text.assemble(("Write ", "bold"), (self._what(), "bold"), (f" to {plan.snapshot.path}?\n", "bold"))
        if plan.will_unload:
            head.append(f"Reloading will unload: {', '.join(plan.will_unload)}\n", style=BUSY)
        else:
            head.append("No loaded model is affected.\n", style=OK)
        if not plan.router_running:
            head.append("The router is not running: it reads the file when it starts.\n", style=DIM)
        head.append("enter or ctrl+s writes, escape goes back to the form.", style=DIM)
        return head

    def action_write(self) -> None:
        if self.mode == "review" and self.plan is not None and not self.busy:
            self.write(self.plan)

    @work(exclusive=True, group="preset-form")
    async def write(self, plan: PresetPlan) -> None:
        self.busy = True
        try:
            result = await self.fleet.apply_preset(self.machine, plan)
        except PresetConflict as e:
            self.conflict = e
            head = conflict_head(
                ("r", "reloads the form from the file (edits made here are dropped)"),
                ("escape", "goes back to the form"),
            )
            self._to_review(head, e.diff, "conflict")
            return
        except RouterError as e:
            self.app.notify(
                not_reloaded(f"Saved {self._what()} in {plan.snapshot.path}", e),
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
        return summary(f"Saved {self._what()} in {result.plan.snapshot.path}", result)

    def action_cancel(self) -> None:
        if self.mode in ("form", "loading"):
            self.workers.cancel_group(self, "preset-form")
            self.dismiss(None)

    def action_back(self) -> None:
        if self.mode in ("review", "conflict") and not self.busy:
            self.plan = None
            self._to_form()

    def action_reload_form(self) -> None:
        if self.mode == "conflict":
            self._return_focus = None
            self.load()

    async def action_add_row(self) -> None:
        if self.mode != "form":
            return
        row = FreeRow()
        await self.query_one("#pf-free", Vertical).mount(row)
        row.key_input.focus()
        row.scroll_visible()

    async def action_remove_row(self) -> None:
        row = self._focused_row()
        if row is not None:
            await self._remove(row)

    def _focused_row(self) -> FreeRow | None:
        node = self.focused
        while node is not None and not isinstance(node, FreeRow):
            node = node.parent if isinstance(node.parent, Widget) else None
        return node

    async def _remove(self, row: FreeRow) -> None:
        rows = list(self.query(FreeRow))
        index = rows.index(row)
        await row.remove()
        rows.remove(row)
        if rows:
            rows[min(index, len(rows) - 1)].key_input.focus()
        else:
            self.query_one("#pf-add", Button).focus()

    # ---- events ----

    @on(Button.Pressed, "#pf-add")
    async def _add_pressed(self) -> None:
        await self.action_add_row()

    @on(Button.Pressed, ".free-remove")
    async def _remove_pressed(self, event: Button.Pressed) -> None:
        row = event.button.parent
        if isinstance(row, FreeRow):
            await self._remove(row)

    @on(Input.Submitted)
    def _next_field(self) -> None:
        """Enter in a field moves on to the next one, as tab does."""
        self.focus_next()

    def on_descendant_focus(self) -> None:
        self.refresh_bindings()  # "Remove key" applies only inside a free row
