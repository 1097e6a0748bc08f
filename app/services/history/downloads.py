"""Downloads and removals as history rows, recorded like loads: `pulled`, `pull failed: <cause>`, `removed`.

The router's log has no line that says a pull landed or why it did not in words an operator reads (its events
even say `download_finished` for a repo the hub does not have), so these rows are written by whoever followed the
pull to its outcome (hub/pull.py's, in the CLI or the dashboard), under the router's scope (history/scope.py).
"""

from __future__ import annotations

import sqlite3
import time

from app.config import MachineConfig
from app.services.core.textsafe import visible
from app.services.history.scope import router_scope
from app.services.history.store import HistoryRow, HistoryStore


def pull_row(cfg: MachineConfig, model: str, ok: bool, cause: str, by: str, now: float | None = None) -> HistoryRow:
    reason = "pulled" if ok else f"pull failed: {cause}"
    detail = f"by {by}" + (f"; {cause}" if ok and cause else "")
    to = "downloaded" if ok else "failed"
    return HistoryRow(now or time.time(), cfg.name, cfg.router, model, "downloading", to, visible(reason),
                      visible(detail), scope=router_scope(cfg))  # fmt: skip


def removal_row(cfg: MachineConfig, model: str, detail: str, by: str, now: float | None = None) -> HistoryRow:
    return HistoryRow(now or time.time(), cfg.name, cfg.router, model, "unloaded", "removed", "removed",
                      visible(f"by {by}; {detail}"), scope=router_scope(cfg))  # fmt: skip


async def record(rows: list[HistoryRow], store: HistoryStore | None = None) -> str:
    """Add the rows ("" when done, else why not: a history that cannot be written stops nothing)."""
    own = store is None
    db = store or HistoryStore()
    try:
        await db.add(rows)
        return ""
    except (sqlite3.Error, OSError) as e:
        return f"history not recorded: {e}"
    finally:
        if own:
            db.close()
