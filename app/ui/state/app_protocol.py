"""What the dashboard's screens and helpers ask of the app, as a Protocol that HerdApp (app.py) implements.

The screens name this instead of HerdApp: app.py builds every screen, so screens that named HerdApp back (even
for type checking only) made app, dashboard, its actions, the fit advisor and the palette one circle of imports.
App methods (push_screen, run_worker, ...) are reached through Textual's own `self.app`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from textual.notifications import SeverityLevel

from app.config import Config
from app.services.core.operator_presence import OperatorHands
from app.services.history.last_change import LastChanges
from app.services.history.store import HistoryStore
from app.ui.state.fleet_protocol import FleetApi
from app.ui.state.herd_state import HerdState
from app.ui.text.glyphs import Glyphs


class HerdApi(Protocol):
    state: HerdState
    fleet: FleetApi
    config: Config
    config_path: Path | None
    glyphs: Glyphs
    hands: OperatorHands
    history: HistoryStore | None
    last_changes: LastChanges
    first_run: bool
    frozen_time: float | None

    def now(self) -> float: ...

    def follow_fleet(self) -> Any: ...  # a worker (textual's @work): the fleet's events, followed once

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None: ...
