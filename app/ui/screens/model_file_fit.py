"""The model files screen's estimate for the file under the cursor, before it is added (issue 13, item 5).

The estimate reads the file's GGUF header on its machine, so it is asked for in a worker; what is known is
remembered per file while the screen is open, and what it would meet is judged on the dashboard's last host stats.
"""

from __future__ import annotations

from typing import Any

from textual.app import App

from app.services.core.host_types import HostStats
from app.ui.state.herd_state import HerdState


def host_stats(app: App[Any], machine: str) -> HostStats | None:
    """The machine's last host stats when the screen runs in the dashboard (which collects them), else None."""
    state = getattr(app, "state", None)
    return state.get(machine).stats if isinstance(state, HerdState) else None


def estimate_text(known: str | None) -> str:
    return "estimate: reading the header…" if known is None else known
