"""Test helpers for Textual apps: the screen as plain text and notifications as a list.

To wait for a condition while the app runs: tests.helpers.wait.wait_for(cond, ..., pilot=pilot)."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console
from textual.app import App


def screen_text(app: App[Any]) -> str:
    """What the terminal would show, as text (the same render export_screenshot makes, without the SVG)."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, record=True,
                      legacy_windows=False, safe_box=False)  # fmt: skip
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text()


def record_notifications(app: App[Any]) -> list[tuple[str, str, str]]:
    """Notifications as (severity, title, message), recorded as they are made (and still shown)."""
    seen: list[tuple[str, str, str]] = []
    notify = app.notify

    def rec(message: str, *, title: str = "", severity: Any = "information", **kw: Any) -> None:
        seen.append((str(severity), title, message))
        notify(message, title=title, severity=severity, **kw)

    app.notify = rec  # type: ignore[method-assign]
    return seen
