"""`llamaherd status --json`: one object per machine, every key always there (null, 0 or [] when unknown), so a
script can index any of them (one hit KeyError on `router` for an unreachable ssh machine). Documented in the
README's "Status as JSON"; a key is added, never removed or renamed, and SCHEMA counts the changes."""

from __future__ import annotations

from typing import Any

from app.services.core.router_types import ModelInfo
from app.services.hosts.child_memory import ModelMemory

SCHEMA = 2
"""1: the first; 2: each model's `rss`, `gpu_memory` and `memory_unknown`."""

# key -> its value when nothing was learnt of it (a machine not reached, a router not asked).
STATUS_KEYS: dict[str, Any] = {
    "schema": SCHEMA,
    "machine": "",
    "host": "",
    "connection": "unknown",  # local, connected, unreachable, ...
    "router": "unknown",  # running, stopped, exited, absent, attached, unreachable, not answering, ...
    "reason": "",  # why, when the router or the machine is not fine ("" when it is)
    "url": None,  # an attached router's URL
    "pid": None,
    "port": None,
    "api_key": None,  # "required" or "none" for a router llamaherd started; null when unknown
    "uptime_s": None,
    "log_tail": [],
    "models_loaded": 0,
    "models_known": 0,
    "models_failed": [],
    "models": [],  # [{id, state, ctx, exit_code, failed, rss, gpu_memory, memory_unknown}] as the router listed them
    "cpu_pct": None,
    "mem_used": None,
    "mem_total": None,
    "load_avg": [],
    "gpus": [],
    "rss": None,  # the router's process tree, bytes
}


def model_entry(m: ModelInfo, mem: ModelMemory | None = None) -> dict[str, Any]:
    """One model; `mem` its memory when it runs (rss and gpu_memory in bytes, null when not known, and then
    memory_unknown says why; a model not running has nulls and "")."""
    return {
        "id": m.id,
        "state": m.state.value,
        "ctx": m.ctx,
        "exit_code": m.exit_code,
        "failed": m.failed,
        "rss": mem.rss if mem else None,
        "gpu_memory": mem.gpu if mem else None,
        "memory_unknown": mem.why if mem else "",
    }


def stable(found: dict[str, Any]) -> dict[str, Any]:
    """`found` with every key of the schema, in the schema's order (a key the schema lacks is a bug: left out)."""
    out = {k: (list(v) if isinstance(v, list) else v) for k, v in STATUS_KEYS.items()}
    out.update((k, v) for k, v in found.items() if k in STATUS_KEYS)
    out["reason"] = out["reason"] or ""
    return out
