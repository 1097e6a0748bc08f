"""Remove a cache model from a machine: unload it if it runs, `DELETE /models?model=ID`, then look in the cache on
the serving machine that its files are really gone (the router answers success even when it deleted nothing,
reference §2.8). A model that is not from the cache (a preset's own file) is refused: that file is the
operator's, and the router would refuse it too.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from app.services.core.errors import HerdError
from app.services.core.router_types import ModelInfo
from app.services.hub.cache_files import model_files, router_cache
from app.services.machine.machine import Machine

# Unloading first, then the delete (which also waits for the child), each within this.
STEP_TIMEOUT = 60.0


class RemoveRefused(HerdError):
    """The model cannot be removed this way; the message says why and what to do instead."""


@dataclass(frozen=True)
class Removal:
    machine: str
    model: str
    unloaded: bool  # it was running and was unloaded first
    removed_files: tuple[str, ...]  # the cache files there before and gone now
    left: tuple[str, ...]  # cache files of it still there (should be none)
    cache: str | None  # the cache folder looked in (None: unknown here, not checked)

    @property
    def ok(self) -> bool:
        return not self.left

    def line(self) -> str:
        if self.left:
            return f"{self.model} removed from {self.machine}'s list, but files remain: {', '.join(self.left)}"
        if self.cache is None:
            return f"{self.model} removed from {self.machine} (its cache folder is not known here: not checked)"
        return f"{self.model} removed from {self.machine}: {len(self.removed_files)} file(s) gone from {self.cache}"

    def as_json(self) -> dict[str, Any]:
        return {"machine": self.machine, "model": self.model, "unloaded": self.unloaded, "ok": self.ok,
                "removed_files": list(self.removed_files), "left": list(self.left), "cache": self.cache}  # fmt: skip


def find_model(models: list[ModelInfo], name: str) -> ModelInfo | None:
    for m in models:
        if m.id == name or name in m.aliases:
            return m
    low = name.lower()
    return next((m for m in models if m.id.lower() == low), None)


def refusal(machine: str, model: ModelInfo) -> str:
    """Why `model` cannot be removed with rm ("" when it can)."""
    if model.source == "cache" and model.can_remove:
        return ""
    source = model.source or "unknown"
    return (
        f"{model.id} on {machine} is not from the download cache (source: {source}): its file is the operator's; "
        "remove its section from the preset instead (the file stays where it is)"
    )


async def remove(m: Machine, name: str) -> Removal:
    client = await m.router_client()
    models = await client.models()
    target = find_model(models, name)
    if target is None:
        raise RemoveRefused(f"no model {name!r} on {m.name}")
    why = refusal(m.name, target)
    if why:
        raise RemoveRefused(why)
    cache = await router_cache(m)
    before = [f.path for f in await model_files(m, cache, target.id)] if cache else []
    unloaded = False
    if target.state.running:
        async with asyncio.timeout(STEP_TIMEOUT):
            await client.unload(target.id)
            while True:  # the unload answers before the child has gone
                now = find_model(await client.models(), target.id)
                if now is None or not now.state.running:
                    break
                await asyncio.sleep(0.1)
        unloaded = True
    await client.remove(target.id, timeout=STEP_TIMEOUT)
    m.relisted(await client.models())
    left = [f.path for f in await model_files(m, cache, target.id)] if cache else []
    return Removal(m.name, target.id, unloaded, tuple(p for p in before if p not in left), tuple(left), cache)
