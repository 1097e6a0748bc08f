"""A Textual driver for a dashboard running inside `llamaherd serve`, drawing into one browser tab's websocket.

It does what Textual's own WebDriver does (the same escape sequences at start, the same xterm input parser), but in
this process: output goes to the websocket instead of stdout, input comes from the websocket's messages instead
of stdin. So every tab's dashboard runs on the serve process's event loop over the one Fleet (app/web/shared.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from textual import events, messages
from textual.app import App
from textual.driver import Driver
from textual.geometry import Size

from app.ui.patches.textual_internals import TabInputParser

# A lone Esc is told from the start of a sequence by time: the parser is ticked this long after input stops.
ESC_TICK = 0.1


class SessionDriver(Driver):
    """`sink` and `closed` are set per session (session_driver_class)."""

    sink: Callable[[bytes], None]
    closed: Callable[[], None]
    created: Callable[[SessionDriver], None] = staticmethod(lambda driver: None)

    def __init__(
        self, app: App[Any], *, debug: bool = False, mouse: bool = True, size: tuple[int, int] | None = None
    ) -> None:
        super().__init__(app, debug=debug, mouse=mouse, size=size)
        self._parser = TabInputParser(debug=debug)
        self._tick: asyncio.TimerHandle | None = None
        self.started: Callable[[], object] = lambda: None
        """Called once the application mode has begun (what the page said before it is applied then)."""
        self.created(self)

    @property
    def is_web(self) -> bool:
        return True

    def write(self, data: str) -> None:
        self.sink(data.encode("utf-8"))

    def flush(self) -> None:
        pass

    def start_application_mode(self) -> None:
        self.write("\x1b[?1049h")  # alternate screen
        if self._mouse:
            self.write("\x1b[?1000h\x1b[?1003h\x1b[?1015h\x1b[?1006h")
        self.write("\x1b[?25l")  # no cursor
        self.write("\x1b[?2026$p")  # ask for synchronised output
        self.write("\x1b[?2004h")  # bracketed paste
        size = Size(*(self._size or (80, 24)))
        self._app.post_message(events.Resize(size, size))
        self._app.call_later(self._app.post_message, events.AppBlur())
        self._app.call_later(self.started)

    def disable_input(self) -> None:
        pass

    def stop_application_mode(self) -> None:
        if self._tick is not None:
            self._tick.cancel()
        self.closed()

    # ---- from the browser ----

    def feed(self, text: str) -> None:
        for event in self._parser.feed(text):
            self.process_message(event)
        if self._tick is not None:
            self._tick.cancel()
        self._tick = asyncio.get_running_loop().call_later(ESC_TICK, self._ticked)

    def _ticked(self) -> None:
        self._tick = None
        for event in self._parser.tick():
            self.process_message(event)

    def resize(self, width: int, height: int) -> None:
        self._size = (width, height)
        size = Size(width, height)
        self._app.post_message(events.Resize(size, size))

    def focus(self, on: bool) -> None:
        self._app.post_message(events.AppFocus() if on else events.AppBlur())

    def quit(self) -> None:
        self._app.post_message(messages.ExitApp())


def session_driver_class(sink: Callable[[bytes], None], closed: Callable[[], None]) -> type[SessionDriver]:
    """A driver class bound to one session's output (Textual builds the driver itself, from its class)."""
    return type("BoundSessionDriver", (SessionDriver,), {"sink": staticmethod(sink), "closed": staticmethod(closed)})
