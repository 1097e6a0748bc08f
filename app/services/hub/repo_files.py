"""A repo's GGUF files as an operator chooses among them: one entry per quant (a sharded model is one entry, its
size the sum of its shards), the `mmproj` projector shown as the vision companion, not as a model.

The quant tag is derived as llama-server names cache models (reference §5.2): the file name's suffix after the last
`-` or `.`, upper-cased, once `.gguf` and a `-NNNNN-of-NNNNN` shard suffix are removed. So `repo:TAG` here is the
name a pull asks for and the name the model has in the router's list afterwards.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from app.services.hub.hub_api import RepoFile

_SHARD = re.compile(r"-(\d{5})-of-(\d{5})$")
# Files the router skips as models (reference §5.2): projectors and speculative drafts.
_NOT_MODELS = ("mmproj", "mtp-", "eagle3-", "dflash-", "dspark-")


@dataclass(frozen=True)
class QuantFile:
    """One pullable choice: `repo:quant`, the file(s) it is made of, and their total size."""

    quant: str
    paths: tuple[str, ...]  # the first shard first
    size: int

    @property
    def first(self) -> str:
        return self.paths[0]


@dataclass(frozen=True)
class RepoListing:
    repo: str
    quants: tuple[QuantFile, ...]
    vision: tuple[QuantFile, ...]  # mmproj files: fetched with a quant by the router when the repo has them
    other_gguf: tuple[str, ...]  # GGUF files without a tag (not pullable by name)


def quant_of(path: str) -> tuple[str, int, int]:
    """(TAG, shard index, shard count) of a GGUF file name; TAG "" when the name has none."""
    stem = posixpath.basename(path)
    stem = stem[: -len(".gguf")] if stem.lower().endswith(".gguf") else stem
    index, count = 1, 1
    m = _SHARD.search(stem)
    if m:
        index, count = int(m[1]), int(m[2])
        stem = stem[: m.start()]
    cut = max(stem.rfind("-"), stem.rfind("."))
    return (stem[cut + 1 :].upper() if cut >= 0 else ""), index, count


def is_projector(path: str) -> bool:
    return "mmproj" in posixpath.basename(path).lower()


def _skipped(path: str) -> bool:
    name = posixpath.basename(path).lower()
    return any(name.startswith(p) or (p == "mmproj" and p in name) for p in _NOT_MODELS)


def group(repo: str, files: list[RepoFile]) -> RepoListing:
    """The repo's GGUF files grouped by quant, sorted by size (smallest first)."""
    by_quant: dict[str, list[tuple[int, RepoFile]]] = {}
    vision: list[QuantFile] = []
    other: list[str] = []
    for f in files:
        if not f.path.lower().endswith(".gguf"):
            continue
        if is_projector(f.path):
            vision.append(QuantFile(quant_of(f.path)[0] or "mmproj", (f.path,), f.size))
            continue
        if _skipped(f.path):
            continue
        tag, index, _ = quant_of(f.path)
        if not tag:
            other.append(f.path)
            continue
        by_quant.setdefault(tag, []).append((index, f))
    quants = []
    for tag, parts in by_quant.items():
        parts.sort(key=lambda p: (p[0], p[1].path))
        quants.append(QuantFile(tag, tuple(p[1].path for p in parts), sum(p[1].size for p in parts)))
    quants.sort(key=lambda q: (q.size, q.quant))
    return RepoListing(repo, tuple(quants), tuple(sorted(vision, key=lambda v: v.size)), tuple(other))


def find_quant(listing: RepoListing, quant: str) -> QuantFile | None:
    return next((q for q in listing.quants if q.quant == quant.upper()), None)
