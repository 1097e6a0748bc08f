"""How a router's model list is kept from what it says: pure functions from (what we knew, what arrived) to what
we know now. Machine applies them and tells the UI when the result differs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from app.services.core.router_types import ModelInfo, ModelState, ModelStatusEvent

# Facts the list drops once a model is unloaded, and status events carry in `meta`.
_META = ("n_ctx", "n_params", "size")
# States in which the list's architecture arrays are the child's own, not the router's offline guess.
_SAID = (ModelState.LOADED, ModelState.SLEEPING)


def fold_list(known: Mapping[str, ModelInfo], models: Iterable[ModelInfo]) -> dict[str, ModelInfo]:
    """The models of a full `GET /models` list, keeping what the list leaves out but we last knew."""
    fresh: dict[str, ModelInfo] = {}
    for m in models:
        old = known.get(m.id)
        if old is not None:
            # The list has no progress and drops meta once unloaded: keep what we last knew.
            keep: dict[str, object] = {}
            if m.state is ModelState.LOADING and old.progress is not None:
                keep["progress"] = old.progress
            if m.state is ModelState.DOWNLOADING and old.download is not None:
                keep["download"] = old.download
            for f in _META:
                if getattr(m, f) is None and getattr(old, f) is not None:
                    keep[f] = getattr(old, f)
            if old.vision_said is not None and m.state not in _SAID:
                keep["vision_said"] = old.vision_said
            if keep:
                m = dataclasses.replace(m, **keep)  # type: ignore[arg-type]
        if m.state in _SAID:
            # A running child's own arrays replace the offline guess in the list: what it says is measured.
            m = dataclasses.replace(m, vision_said="image" in m.input_modalities)
        fresh[m.id] = m
    return fresh


def first_sight(model: str) -> ModelInfo:
    """A model the router has not listed yet: all we know is its name."""
    return ModelInfo(id=model, state=ModelState.UNKNOWN)


def fold_status(old: ModelInfo, ev: ModelStatusEvent) -> ModelInfo:
    """One model after a status event: its state, progress, exit code and whatever meta the event carries."""
    changes: dict[str, object] = {"state": ev.status}
    if ev.status is ModelState.LOADING:
        changes["progress"] = ev.progress or (old.progress if old.state is ModelState.LOADING else None)
        changes["exit_code"] = None
        changes["failed"] = False
    else:
        changes["progress"] = None
    if ev.exit_code is not None:
        changes["exit_code"] = ev.exit_code
        changes["failed"] = ev.exit_code != 0
    arch = (ev.info or {}).get("architecture")
    mods = arch.get("input_modalities") if isinstance(arch, dict) else None
    if isinstance(mods, list) and all(isinstance(x, str) for x in mods):
        # The child's `ready` payload (first load): its arrays replace the list's offline guess.
        changes["input_modalities"] = tuple(mods[:16])
        changes["vision_said"] = "image" in mods
    meta = (ev.info or {}).get("meta")
    if isinstance(meta, dict):
        for f in _META:
            v = meta.get(f)
            if isinstance(v, int):
                changes[f] = v
    return dataclasses.replace(old, **changes)  # type: ignore[arg-type]


def fold_router_gone(known: Mapping[str, ModelInfo]) -> dict[str, ModelInfo]:
    """Nothing runs on a router that is gone: every model unloaded, without progress."""
    return {k: dataclasses.replace(m, state=ModelState.UNLOADED, progress=None) for k, m in known.items()}
