"""A model's last recorded change as a few words beside its status: "evicted for chat-big · 14:02".

The time is the clock time of the change, not "2m ago": a table repaints what changed, and an age would go stale
in a row nothing repaints. Shown only while the model is still in the state that change left it in.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping

from app.services.core.router_types import ModelInfo
from app.services.history.store import HistoryRow
from app.ui.text.format import is_failed

_FOR = re.compile(r"\bfor (\S+)$")
DAY = 86400.0


def reason_note(m: ModelInfo, r: HistoryRow | None, now: float) -> str:
    if r is None or r.to_state != ("failed" if is_failed(m) else m.state.value):
        return ""
    words = r.reason
    found = _FOR.search(r.detail) if r.reason == "evicted" else None
    if found:
        words += f" for {found.group(1)}"
    fmt = "%H:%M" if now - r.time < DAY else "%b %d %H:%M"
    return f"{words} · {time.strftime(fmt, time.localtime(r.time))}"


def reason_notes(models: Iterable[ModelInfo], last: Mapping[str, HistoryRow], now: float) -> dict[str, str]:
    """The note of each model that has one, by model id."""
    if not last:
        return {}
    return {m.id: note for m in models if (note := reason_note(m, last.get(m.id), now))}
