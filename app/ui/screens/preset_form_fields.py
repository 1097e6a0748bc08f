"""The preset editor's fields: their groups in display order, which keys of a section they own, the widget of each
field and how it shows a value, and the free rows for every other key."""

from __future__ import annotations

from collections.abc import Mapping

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widget import Widget
from textual.widgets import Button, Input, Select, Static

from app.services.core.errors import PresetError
from app.services.presets.fields import (
    FIELDS,
    FIELDS_BY_KEY,
    PresetField,
    field_for,
    validate_key,
    validate_section_name,
    validate_value,
)
from app.services.presets.ini_text import GLOBAL_SECTION, PresetDoc
from app.services.presets.sections import apply_form, validate_mapping
from app.services.presets.store import Edit

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


def widget_id(key: str) -> str:
    return f"field-{key}"


def unset_prompt(field: PresetField) -> str:
    return f"unset (default: {field.default})" if field.default else "unset"


def field_widget(field: PresetField) -> Widget:
    wid = widget_id(field.key)
    if field.kind == "bool":
        opts = [("true", "true"), ("false", "false")]
        return Select[str](opts, prompt=unset_prompt(field), compact=True, id=wid)
    if field.kind == "choice":
        opts = [(c, c) for c in field.choices]
        return Select[str](opts, prompt=unset_prompt(field), compact=True, id=wid)
    integer = field.kind == "int" and not field.words
    return Input(
        placeholder=field.default or "",
        type="integer" if integer else "text",
        compact=True,
        id=wid,
    )


def show_value(widget: Widget, field: PresetField, value: str, from_global: str) -> None:
    """`value` in the field's widget ("" = unset); `from_global` is what `[*]` gives it, shown as the hint."""
    if isinstance(widget, Input):
        widget.value = value
        widget.cursor_position = len(value)
        widget.placeholder = f"{from_global} (from [*])" if from_global else field.default or ""
    elif isinstance(widget, Select):
        widget.prompt = f"unset ({from_global} from [*])" if from_global else unset_prompt(field)
        offered = [(c, c) for c in (field.choices if field.kind == "choice" else ("true", "false"))]
        if value and value not in dict(offered):
            offered.append((value, value))  # a value the file has that the form does not offer: kept
        widget.set_options(offered)
        if value:
            widget.value = value
        else:
            widget.clear()


def value_of(widget: Widget) -> str:
    """The value a field's widget shows ("" = unset)."""
    if isinstance(widget, Input):
        return widget.value
    assert isinstance(widget, Select)
    return "" if widget.is_blank() else str(widget.value)


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


class RowRefused(Exception):
    """A free row that cannot be written: `widget` is its input at fault, to mark and focus."""

    def __init__(self, message: str, widget: Input) -> None:
        self.widget = widget
        super().__init__(message)


class FreeRows(Vertical):
    """The section's keys that no field of the form covers, one FreeRow each."""

    filled: tuple[tuple[str, str], ...] = ()
    """The rows as read from the file, to tell an edit from none."""

    async def fill(self, section: Mapping[str, str]) -> None:
        await self.remove_children()
        rows = [FreeRow(k, v) for k, v in section.items() if not owned_by_form(k)]
        self.filled = tuple((k, v) for k, v in section.items() if not owned_by_form(k))
        if rows:
            await self.mount_all(rows)

    async def add_row(self) -> FreeRow:
        row = FreeRow()
        await self.mount(row)
        return row

    async def remove_row(self, row: FreeRow) -> FreeRow | None:
        """Remove `row`; the row now in its place (to take the focus), or None when no row is left."""
        rows = list(self.query(FreeRow))
        index = rows.index(row)
        await row.remove()
        rows.remove(row)
        return rows[min(index, len(rows) - 1)] if rows else None

    def edited(self) -> bool:
        """Whether the rows differ from what was read (a row added and left empty is no edit)."""
        now = tuple(
            (row.key_input.value.strip(), row.value_input.value)
            for row in self.query(FreeRow)
            if row.key_input.value.strip() or row.value_input.value.strip()
        )
        return now != self.filled

    def key_input(self, key: str | None) -> Input | None:
        rows = [row for row in self.query(FreeRow) if key and row.key_input.value.strip() == key]
        return rows[0].key_input if rows else None

    def mapping(self, known: frozenset[str] | None) -> dict[str, str]:
        """The rows' keys and values, checked and normalised ("" = removed); RowRefused at the first fault."""
        free: dict[str, str] = {}
        for row in self.query(FreeRow):
            key, value = row.key_input.value.strip(), row.value_input.value
            if not key and not value.strip():
                continue  # an empty row is no key
            try:
                if not key:
                    raise PresetError(f"a key is needed for the value {value.strip()!r}")
                validate_key(key, known)
                if owned_by_form(key):
                    field = field_for(key) or FIELDS_BY_KEY["mmproj"]
                    raise PresetError(f"key {key!r} is the field {field.label} above: set it there")
                if key in free:
                    raise PresetError(f"key {key!r} is given twice")
            except PresetError as e:
                raise RowRefused(str(e), row.key_input) from None
            try:
                free[key] = validate_value(key, value)
            except PresetError as e:
                raise RowRefused(f"{key}: {e}", row.value_input) from None
        return free
