"""The model files screen's rows as pure data: each model (every part of it) with its projectors and draft heads
beside it, whether the preset has it, and why one that cannot be added cannot."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from rich.text import Text

from app.services.core.host_types import FileInfo
from app.services.core.natural_order import natural_key
from app.services.files.discovery import DiscoveredModel, Discovery, common_dir
from app.services.presets.store import PresetSnapshot
from app.ui.text.format import BAD, DIM, IDLE, OK

_SHARD = re.compile(r"-(\d{5})-of-(\d{5})\.gguf$", re.IGNORECASE)


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
    in_preset: Text = field(default_factory=Text)
    """Whether the preset has the model: "yes", "as [name]" (under another section), "no"; empty for a companion."""

    @property
    def addable(self) -> bool:
        return self.model is not None and not self.why_not


def base_dir(files: Iterable[FileInfo]) -> str:
    """The directory every listed file is under: paths in the table are shown relative to it."""
    return common_dir(f.path for f in files)


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
    # Folders and files in natural order (qwen3-8b before qwen3-14b), a folder's models before its companions.
    return [row for _, row in sorted(rows, key=lambda r: (natural_key(r[0][0]), r[0][1], natural_key(r[0][2])))]


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
        in_preset = Text("yes", style=OK)
    else:
        others = [s for s in by_path.get(m.path, []) if s != m.name]
        in_preset = Text(f"as {', '.join(f'[{s}]' for s in others)}", style=IDLE) if others else Text("no", DIM)
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
    return FileRow(f"model:{m.path}", m.path, m.size, role, section, beside, model=m, why_not=why, in_preset=in_preset)


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


def row_hint(row: FileRow, snapshot: PresetSnapshot | None) -> str:
    """What the keys do with the row under the cursor, or why it cannot be added."""
    if row.why_not or row.model is None:
        return row.why_not
    name = row.model.name
    names, _ = preset_sections(snapshot)
    if name in names:
        return f"[{name}] is already in the preset; n adds this file under another name."
    return f"a or enter adds [{name}] to the preset; n adds it under another name."
