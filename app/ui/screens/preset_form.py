"""The preset editor: one section of a machine's preset file as a form, the diff before writing, then the write.

Everything goes through the Fleet (read, known keys, plan, apply); this screen only turns widgets into a section
mapping. Only the fields the operator changed are handed to `apply_form`, so an untouched field keeps its spelling
in the file (`fa = true` is not rewritten as `flash-attn = on` because someone edited the context size).
"""

from __future__ import annotations

from enum import StrEnum
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, ContentSwitcher, Footer, Input, Static

from app.services.core.errors import HerdError, PresetError
from app.services.core.textsafe import visible
from app.services.presets.fields import FIELDS_BY_KEY, PresetField, validate_value
from app.services.presets.ini_text import GLOBAL_SECTION, router_name
from app.services.presets.secret_keys import exposed_by_argv
from app.services.presets.sections import apply_form, read_form
from app.services.presets.store import Edit, PresetConflict, PresetPlan, PresetResult, PresetSnapshot
from app.ui.screens.confirm import ConfirmScreen
from app.ui.screens.preset_form_fields import (
    FreeRow,
    FreeRows,
    RowRefused,
    field_widget,
    grouped_fields,
    owned_by_form,
    section_edit,
    show_value,
    value_of,
    widget_id,
)
from app.ui.screens.preset_review import PresetReview, save_head
from app.ui.screens.preset_write import PresetFleet, conflict_head, known_keys, write_preset
from app.ui.text.format import BUSY, DIM
from app.ui.text.plain_text import plain, safe_text

GROUP = "preset-form"


class FormMode(StrEnum):
    LOADING = "loading"
    FORM = "form"
    REVIEW = "review"
    CONFLICT = "conflict"


_ENABLED: dict[str, frozenset[FormMode]] = {
    "save": frozenset({FormMode.FORM}),
    "add_row": frozenset({FormMode.FORM}),
    "remove_row": frozenset({FormMode.FORM}),  # and only inside a free row
    "cancel": frozenset({FormMode.FORM, FormMode.LOADING}),
    "write": frozenset({FormMode.REVIEW}),
    "back": frozenset({FormMode.REVIEW, FormMode.CONFLICT}),
    "reload_form": frozenset({FormMode.CONFLICT}),
}
"""The modes in which each of the editor's actions applies (an action not listed applies in every mode)."""


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
        self.mode = FormMode.LOADING
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
                            yield field_widget(field)
                        if field.help:
                            yield Static(field.help, classes="pf-help")
                yield Static("Other keys", classes="pf-group")
                yield Static(
                    "Any other llama-server option of this section, by its key without dashes.", classes="pf-help"
                )
                yield FreeRows(id="pf-free")
                yield Button("+ add key (ctrl+n)", compact=True, id="pf-add")
            yield PresetReview(id="pf-review")
        yield Footer()

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
        return safe_text(t)

    def on_mount(self) -> None:
        self.query_one("#pf-switcher").disabled = True
        self.query_one("#pf-warning").display = False
        self.query_one("#pf-error").display = False
        self.load()

    # ---- reading ----

    @work(exclusive=True, group=GROUP, exit_on_error=False)  # a failure is a message, not a crash
    async def load(self) -> None:
        self.mode = FormMode.LOADING
        self.refresh_bindings()
        try:
            snapshot = await self.fleet.read_preset(self.machine)
        except HerdError as e:
            self.show_error(f"Cannot read the preset of {self.machine}: {e}")
            return
        self.known, warning = await known_keys(self.fleet, self.machine)
        await self._fill(snapshot)
        self._show_warning(warning)

    async def _fill(self, snapshot: PresetSnapshot) -> None:
        self.snapshot = snapshot
        self.plan = None
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
            show_value(widget, field, value, inherited.get(field.key, ""))
        await self.query_one(FreeRows).fill(self.current_keys)
        self.query_one("#pf-title", Static).update(self._title())
        self.query_one("#pf-switcher").disabled = False
        self.show_error("")
        self._to_form()
        first = self.query_one(f"#{widget_id(self.fields[0].key)}")
        first.focus()

    # ---- modes ----

    def _to_form(self) -> None:
        self.mode = FormMode.FORM
        self.query_one("#pf-switcher", ContentSwitcher).current = "pf-form"
        if self._return_focus is not None and self._return_focus.is_mounted:
            self._return_focus.focus()
        self._return_focus = None
        self.refresh_bindings()

    def _to_review(self, head: Text, diff: str, mode: FormMode) -> None:
        self.mode = mode
        self._return_focus = self.focused
        self.query_one("#pf-switcher", ContentSwitcher).current = "pf-review"
        self.query_one(PresetReview).show(head, diff)
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        modes = _ENABLED.get(action)
        if modes is None:
            return True
        return self.mode in modes and (action != "remove_row" or self._focused_row() is not None)

    def show_error(self, message: str, style: str = "") -> None:
        error = self.query_one("#pf-error", Static)
        error.update(plain(message, style, multiline=True))
        error.display = bool(message)

    def _show_warning(self, message: str) -> None:
        warning = self.query_one("#pf-warning", Static)
        warning.update(plain(message, multiline=True))
        warning.display = bool(message)

    # ---- building the section ----

    def _value_of(self, field: PresetField) -> str:
        return value_of(self.query_one(f"#{widget_id(field.key)}"))

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
        self.show_error(f"Not saved: {message}")
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
            self._refuse(str(e), self._widget_for(e))
            return None
        try:
            free = self.query_one(FreeRows).mapping(self.known)
        except RowRefused as e:
            self._refuse(str(e), e.widget)
            return None
        return {**mapping, **{k: v for k, v in free.items() if v}}

    def _widget_for(self, refusal: PresetError) -> Widget | None:
        """The field or free row a refusal is about, to mark and focus it."""
        field = refusal.field
        if field is not None and any(f.key == field for f in self.fields):
            return self.query_one(f"#{widget_id(field)}")
        return self.query_one(FreeRows).key_input(refusal.key)

    # ---- actions ----

    def action_save(self) -> None:
        if self.mode is not FormMode.FORM or self.busy or self.snapshot is None:
            return
        mapping = self.build_mapping()
        if mapping is None:
            return
        if not mapping and self.snapshot.doc.get(self.section) is None:
            self.show_error("Nothing changed: the section is still empty.", style=BUSY)
            return
        try:
            edit = section_edit(self.section, mapping, self.current_keys, self.known)
        except PresetError as e:
            self._refuse(str(e), self._widget_for(e))
            return
        self.show_error("")
        # A secret the router would put on the model's command line: written as asked, but said (secret_keys.py).
        changed = [k for k, v in mapping.items() if v and v != self.current_keys.get(k)]
        for warning in exposed_by_argv(changed):
            self.app.notify(visible(warning), title="preset", severity="warning", timeout=12, markup=False)
        self.make_plan(edit)

    @work(exclusive=True, group=GROUP, exit_on_error=False)  # a failure is a message, not a crash
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
            self.show_error("Nothing changed: the file would be the same; nothing is written.", style=BUSY)
            return
        self.plan = plan
        self._to_review(save_head(self.section, plan), plan.diff, FormMode.REVIEW)

    def action_write(self) -> None:
        if self.mode is FormMode.REVIEW and self.plan is not None and not self.busy:
            self.write(self.plan)

    @work(exclusive=True, group=GROUP, exit_on_error=False)  # a failure is a message, not a crash
    async def write(self, plan: PresetPlan) -> None:
        await write_preset(self, plan, f"Saved [{self.section}] in {plan.snapshot.path}")

    def show_conflict(self, conflict: PresetConflict) -> None:
        head = conflict_head(
            ("r", "reloads the form from the file (edits made here are dropped)"),
            ("escape", "goes back to the form"),
        )
        self._to_review(head, conflict.diff, FormMode.CONFLICT)

    def has_edits(self) -> bool:
        """Whether the form holds edits not written yet (what Esc would throw away)."""
        return self.mode is FormMode.FORM and (bool(self.changed_values()) or self.query_one(FreeRows).edited())

    def action_cancel(self) -> None:
        if self.mode not in _ENABLED["cancel"]:
            return
        if not self.has_edits():
            self._close()
            return
        what = "[*]" if self.section == GLOBAL_SECTION else f"[{self.section}]"
        # Section and machine names are outside text: plain Text pieces, control characters shown.
        body = Text.assemble("Discard changes to ", (visible(what), "bold"), " on ", (visible(self.machine), "bold"))
        body.append("?\n\nNothing has been written yet.")
        self.app.push_screen(ConfirmScreen("unsaved changes", body, yes="Discard"), self._discard_answered)

    def _discard_answered(self, discard: bool | None) -> None:
        if discard:
            self._close()

    def _close(self) -> None:
        self.workers.cancel_group(self, GROUP)
        self.dismiss(None)

    def action_back(self) -> None:
        if self.mode in _ENABLED["back"] and not self.busy:
            self.plan = None
            self._to_form()

    def action_reload_form(self) -> None:
        if self.mode is FormMode.CONFLICT:
            self._return_focus = None
            self.load()

    async def action_add_row(self) -> None:
        if self.mode is not FormMode.FORM:
            return
        row = await self.query_one(FreeRows).add_row()
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
        next_row = await self.query_one(FreeRows).remove_row(row)
        if next_row is not None:
            next_row.key_input.focus()
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
