"""Test helpers: the screen as plain text, and waiting for a condition while the app runs."""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from typing import Any

from rich.console import Console
from textual.app import App
from textual.pilot import Pilot


def screen_text(app: App[Any]) -> str:
    """What the terminal would show, as text (the same render export_screenshot makes, without the SVG)."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, record=True,
                      legacy_windows=False, safe_box=False)  # fmt: skip
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text()


async def wait_for(pilot: Pilot[Any], cond: Callable[[], object], timeout: float = 10.0, step: float = 0.02) -> float:
    """Pause until cond() is true; returns the seconds it took. Fails with the screen when it never is."""
    t0 = time.monotonic()
    while not cond():
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"condition not met within {timeout}s; screen:\n{screen_text(pilot.app)}")
        await pilot.pause(step)
    return time.monotonic() - t0
