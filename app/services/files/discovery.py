"""Which of a machine's files are models, and the preset section each one would get.

Pure: it takes the listing of a machine's files (`FileInfo`) and groups the `*.gguf` files the way repositories
publish them and the router's `--models-dir` reads them (reference §5.1):

- a projector (a name containing `mmproj`) belongs to the weights in the same directory;
- a draft head (`mtp-`, `dspark-`, `dflash-`, `eagle3-` prefixes) belongs to the weights in the same directory;
- a model split in parts (`-00001-of-00003.gguf`) is one model: its first part is the path the server is given;
- projectors and draft heads are not offered as models (a server started on one cannot load it), but they stay
  in `Discovery.files`, where files on a disk are managed.
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace

from app.services.core.host_types import FileInfo
from app.services.files.gguf_header import GgufHeader
from app.services.presets.sections import initial_values, mtp_default

DRAFT_PREFIXES = ("mtp-", "dspark-", "dflash-", "eagle3-")
_SHARD_RE = re.compile(r"-(\d{5})-of-(\d{5})$")
_GGUF = ".gguf"


@dataclass(frozen=True)
class DiscoveredModel:
    name: str  # the suggested section name (the name requests will route by)
    path: str  # the file the server is given: the first part of a split model
    parts: tuple[str, ...]  # every part, in order (one for a single file)
    size: int  # bytes, all parts together
    mmproj: str | None = None  # the projector beside the weights
    draft: str | None = None  # the draft head beside the weights
    complete: bool = True  # False when parts of a split model are missing
    mmproj_candidates: tuple[str, ...] = ()  # every projector beside it, when there is a choice


@dataclass(frozen=True)
class Discovery:
    models: tuple[DiscoveredModel, ...]
    projectors: tuple[FileInfo, ...]
    drafts: tuple[FileInfo, ...]
    files: tuple[FileInfo, ...]  # everything given, sorted by path


def is_gguf(path: str) -> bool:
    return path.lower().endswith(_GGUF)


def is_projector(path: str) -> bool:
    # the router matches `mmproj` anywhere in the name; case is ignored here so no projector is offered as a model
    return "mmproj" in posixpath.basename(path).lower()


def is_draft(path: str) -> bool:
    return posixpath.basename(path).lower().startswith(DRAFT_PREFIXES)


def stem(path: str) -> str:
    """The file name without `.gguf` and without a shard suffix: `Qwen-Q4-00001-of-00002.gguf` → `Qwen-Q4`."""
    return _SHARD_RE.sub("", _name(path))


def classify(files: Iterable[FileInfo], root: str | None = None) -> Discovery:
    """Group files into models. `root` is the directory the listing is of (a models directory); without it, the
    directory all the files share. A model alone in a directory directly under `root` is named after that
    directory (as `--models-dir` names it); any other model after its file."""
    all_files = tuple(sorted(files, key=lambda f: f.path))
    ggufs = [f for f in all_files if is_gguf(f.path)]
    projectors = tuple(f for f in ggufs if is_projector(f.path))
    drafts = tuple(f for f in ggufs if is_draft(f.path) and not is_projector(f.path))
    weights = [f for f in ggufs if not is_projector(f.path) and not is_draft(f.path)]
    if root is None:
        root = common_dir(f.path for f in ggufs)

    by_dir: dict[str, list[tuple[str, list[FileInfo]]]] = defaultdict(list)
    for (directory, group_stem, _), parts in _group_parts(weights).items():
        by_dir[directory].append((group_stem, parts))

    models: list[DiscoveredModel] = []
    for directory in sorted(by_dir):
        groups = by_dir[directory]
        beside_mmproj = sorted(f.path for f in projectors if posixpath.dirname(f.path) == directory)
        beside_draft = sorted(f.path for f in drafts if posixpath.dirname(f.path) == directory)
        own_dir = len(groups) == 1 and _is_child(directory, root)
        for group_stem, parts in groups:
            models.append(
                _model(
                    posixpath.basename(directory) if own_dir else group_stem,
                    parts,
                    beside_mmproj,
                    beside_draft,
                )
            )
    return Discovery(tuple(_unique_names(models)), projectors, drafts, all_files)


def _group_parts(weights: list[FileInfo]) -> dict[tuple[str, str, str], list[FileInfo]]:
    """(directory, stem, number of parts) → the files of one model. The number of parts is in the key so that
    two copies of a model split differently stay apart."""
    groups: dict[tuple[str, str, str], list[FileInfo]] = defaultdict(list)
    for f in weights:
        m = _SHARD_RE.search(_name(f.path))
        groups[(posixpath.dirname(f.path), stem(f.path), m.group(2) if m else "")].append(f)
    return groups


def _model(name: str, parts: list[FileInfo], mmprojs: list[str], drafts: list[str]) -> DiscoveredModel:
    ordered = sorted(parts, key=lambda f: f.path)
    m = _SHARD_RE.search(_name(ordered[0].path))
    complete = True
    if m:
        numbers = {int(n.group(1)) for p in ordered if (n := _SHARD_RE.search(_name(p.path)))}
        complete = numbers == set(range(1, int(m.group(2)) + 1))
    return DiscoveredModel(
        name=name,
        path=ordered[0].path,
        parts=tuple(p.path for p in ordered),
        size=sum(p.size for p in ordered),
        mmproj=mmprojs[0] if mmprojs else None,
        draft=drafts[0] if drafts else None,
        complete=complete,
        mmproj_candidates=tuple(mmprojs) if len(mmprojs) > 1 else (),
    )


def _name(path: str) -> str:
    """The file name without `.gguf` (shard suffix kept)."""
    name = posixpath.basename(path)
    return name[: -len(_GGUF)] if is_gguf(name) else name


def common_dir(paths: Iterable[str]) -> str:
    """The directory every path is under ("" when there is none)."""
    dirs = [posixpath.dirname(p) for p in paths]
    if not dirs:
        return ""
    try:
        return posixpath.commonpath(dirs)
    except ValueError:  # absolute and relative paths mixed
        return ""


def _is_child(directory: str, root: str) -> bool:
    return directory != root and posixpath.dirname(directory) == root


def _unique_names(models: list[DiscoveredModel]) -> list[DiscoveredModel]:
    """Section names must differ (a repeated header would replace the first): later ones get -2, -3, ..."""
    seen: set[str] = set()
    out = []
    for model in models:
        name, n = model.name, 1
        while name in seen:
            n += 1
            name = f"{model.name}-{n}"
        seen.add(name)
        out.append(model if name == model.name else replace(model, name=name))
    return out


def section_for(model: DiscoveredModel, header: GgufHeader | None) -> dict[str, str]:
    """The preset keys for a newly found model.

    `mmproj` is written when a projector sits beside the weights: for a section with `model = path` the server
    looks for none itself (it does only for `hf-repo` models). A draft head beside it goes in as `model-draft`
    (the server infers its kind from the file). `spec-type = draft-mtp` where the header shows MTP layers.
    Slots get the measured default (`initial` in the field table).
    """
    section = {"model": model.path}
    if model.mmproj:
        section["mmproj"] = model.mmproj
    if model.draft:
        section["model-draft"] = model.draft
    nextn = header.nextn_predict_layers if header else None
    spec = mtp_default(nextn, None, has_draft=model.draft is not None)
    if spec:
        section["spec-type"] = spec
    section.update(initial_values())
    return section
