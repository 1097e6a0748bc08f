"""HerdApp: the data behind the dashboard, and the one worker that turns fleet events into screen updates.

The app holds the fleet, HerdState and LiveFeed (live.py), which folds every event into the state and has the
dashboard screen (dashboard/screen.py) paint at most every 50 ms, so a burst costs few repaints. Nothing here waits on a
machine: every Fleet command is awaited in a worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from textual import events, work
from textual.app import App
from textual.binding import Binding
from textual.notifications import Notify, SeverityLevel
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from app.config import Config
from app.services.core.fleet_events import FleetEvent
from app.services.core.operator_presence import OperatorHands
from app.services.core.textsafe import visible, visible_lines
from app.services.history.last_change import LastChanges
from app.services.history.store import HistoryRow, HistoryStore
from app.ui.dashboard import keys
from app.ui.dashboard.disabled_key_reasons import why_not
from app.ui.dashboard.screen import DashboardScreen
from app.ui.gc_pauses import freeze_start_up
from app.ui.live import LiveFeed
from app.ui.palette import HerdCommands
from app.ui.patches.rich_internals import measure_ascii_uncached
from app.ui.patches.textual_internals import (
    draw_only_what_changed,
    drop_notification,
    keep_no_dead_styles_caches,
    live_notifications,
    read_text_styles_as_rich,
    type_without_layout,
)
from app.ui.patches.toast_bound import MAX_TOASTS, drop_oldest
from app.ui.state.fleet_protocol import FleetApi
from app.ui.state.herd_state import HerdState
from app.ui.text.glyphs import Glyphs, glyphs_for, want_ascii
from app.ui.widgets.whole_cell_scrollbar import use as use_whole_cell_scrollbars

MAX_BATCH = 5000  # events taken off the queue in one go


class HerdApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "llamaherd"
    ENABLE_COMMAND_PALETTE = True
    # Ours only: Textual's system commands come through it too, after llamaherd's (palette.py), in a fixed order
    # (two providers in a set were shown in whichever order the set gave).
    COMMANDS = {HerdCommands}  # noqa: RUF012 - Textual's own declaration
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]  # noqa: RUF012 - Textual's own declaration
    VERTICAL_BREAKPOINTS = [(0, "-short"), (32, "-tall")]  # noqa: RUF012
    # The dashboard is a mode's screen, not get_default_screen's: Textual mounts a mode's screen, and every pane in
    # it, before it composes the app, so the dashboard's on_mount finds all its panes.
    MODES: ClassVar[dict[str, str | Callable[[], Screen[Any]]]] = {"dashboard": "dashboard"}  # installed below
    DEFAULT_MODE = "dashboard"

    def __init__(
        self,
        config: Config,
        fleet: FleetApi,
        *,
        frozen_time: float | None = None,
        manage_fleet: bool = True,
        ascii_mode: bool | None = None,
        config_path: Path | None = None,
        history: HistoryStore | None = None,
        recorder: Callable[[], Awaitable[None]] | None = None,
        hands: OperatorHands | None = None,
    ) -> None:
        super().__init__()
        self.history = history
        """The transition history the `h` screen reads (None: nothing recorded in this view)."""
        self.recorder = recorder
        self.last_changes = LastChanges()
        """Each model's last recorded change, for its row in the model table."""
        if history is not None:
            history.listeners.append(self._history_added)
        self.hands = hands or OperatorHands()
        """Where a scenario playing beside the operator (the demo's) learns what to leave alone."""
        self.config = config
        self.fleet = fleet
        self.config_path = config_path or config.path
        """Where the config file is (or would go): said on the first run and in help."""
        self.first_run = not config.machines and list(fleet.names) == [m.name for m in config.effective_machines]
        """No machines configured: the fleet is this machine alone ("local"), and the pane says where config goes."""
        self.frozen_time = frozen_time
        self.manage_fleet = manage_fleet
        self._early_events: asyncio.Queue[FleetEvent] | None = None
        self.ascii_mode = want_ascii(config.ui.ascii) if ascii_mode is None else ascii_mode
        self.glyphs: Glyphs = glyphs_for(self.ascii_mode)
        self.state = HerdState(list(fleet.names))
        self.dashboard = DashboardScreen()
        self.install_screen(self.dashboard, "dashboard")
        self.live = LiveFeed(self.state, self.dashboard.paint, self._later, self.call_after_refresh, self.now)
        if config.keymap:
            self.set_keymap(config.keymap)
        # Thumbs of whole cells, at least two (Textual's eighth-block ends read as stray `▉`, `▎`), in either mode:
        # in ASCII mode that is a plain coloured block, as it was.
        use_whole_cell_scrollbars()

    async def run_action(self, action: str | Any, default_namespace: Any = None, namespaces: Any = None) -> bool:
        """Run an action; a dashboard key the footer shows dimmed, pressed anyway, says why it does nothing."""
        done = await super().run_action(action, default_namespace, namespaces)
        if not done and default_namespace is self.dashboard and action in keys.ENABLED_WHEN:
            target = self.dashboard.target()
            st = self.state.get(target[0]) if target else None
            model_id = target[1] if target else None
            model = next((m for m in st.models if m.id == model_id), None) if st else None
            reason = why_not(action, st.view if st else None, model_id, model)
            self.notify(reason, severity="warning", timeout=4, markup=False)
        return done

    def action_help_quit(self) -> None:
        """Ctrl+C quits like `q` (app.quit; routers keep running). Textual's own only says which key quits, in a
        toast whose markup showed raw here, once per press; an input with text selected still takes it as copy."""
        self.exit()

    # ---- clock ----

    def now(self) -> float:
        """Wall time for uptimes and ages; fixed when rendering must be deterministic (snapshots, screenshots)."""
        return self.frozen_time if self.frozen_time is not None else time.time()

    async def on_load(self) -> None:
        """The fleet's first reads begin now, while the screens are built: at 2,000 models the router's list took
        about as long as the app's start-up, and came after it. Its events wait in the queue until the dashboard,
        mounted, follows them (follow_fleet)."""
        if self.manage_fleet:
            self._early_events = self.fleet.subscribe()
            await self.fleet.start()

    def on_mount(self) -> None:
        if self.ascii_mode:
            self.add_class("-ascii")
        self.call_after_refresh(freeze_start_up)

    async def on_unmount(self) -> None:
        if self.manage_fleet:
            await self.fleet.close()

    # ---- the model rows' last change ----

    async def _prime_last_changes(self) -> None:
        if self.history is not None:
            with contextlib.suppress(sqlite3.Error, OSError):  # a history that cannot be read hides only the notes
                self._last_changed(await self.last_changes.prime(self.history, self.now()))

    def _history_added(self, rows: Sequence[HistoryRow]) -> None:
        self._last_changed(self.last_changes.absorb(rows))

    def _last_changed(self, machines: set[str]) -> None:
        if machines and self.dashboard.is_mounted:
            self.dashboard.show_last_changes(machines)

    # ---- live data ----

    @work(group="fleet-events", exclusive=True, exit_on_error=False)
    async def follow_fleet(self) -> None:
        """Started by the dashboard once its widgets are mounted."""
        early, self._early_events = self._early_events, None
        q = early or self.fleet.subscribe()
        try:
            if self.manage_fleet and early is None:
                await self.fleet.start()
            if self.recorder is not None:
                self.run_worker(self.recorder(), name="history recorder", group="history", exit_on_error=False)
            if self.history is not None:
                self.run_worker(self._prime_last_changes(), name="last changes", group="history", exit_on_error=False)
            while True:
                batch: list[FleetEvent] = [await q.get()]
                while not q.empty() and len(batch) < MAX_BATCH:
                    batch.append(q.get_nowait())
                try:
                    self.live.absorb(batch)
                except Exception as e:  # a bug in one update must not stop the live view for good
                    what = f"{type(e).__name__}: {e}"
                    self.notify(what, title="could not show an update", severity="error", markup=False)
        finally:
            self.fleet.unsubscribe(q)

    @property
    def flushes(self) -> int:
        return self.live.flushes

    def _later(self, delay: float, callback: Callable[[], None]) -> None:
        # The loop's own timer, not Textual's: a Textual timer is a task of its own, and a message through the app's
        # queue when it fires, for every paint (3.3 a second while a download's row moves).
        asyncio.get_running_loop().call_later(max(0.0, delay), self._run_later, callback)

    def _run_later(self, callback: Callable[[], None]) -> None:
        try:
            callback()
        except Exception as e:  # as in follow_fleet: a bug in one paint must not stop the live view for good
            self.notify(f"{type(e).__name__}: {e}", title="could not show an update", severity="error", markup=False)

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key):
            self.live.note_input()
        await super().on_event(event)

    def get_key_display(self, binding: Binding) -> str:
        shown = super().get_key_display(binding)
        if self.ascii_mode and not shown.isascii():
            return binding.key  # "up" rather than an arrow a non-UTF-8 terminal cannot show
        return shown

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Every toast, from every screen: plain text with control characters shown. Messages carry model ids,
        paths and remote error text; as markup, "Saved [tiny-a]" lost its name and a path with `[/x]` raised
        MarkupError and took the dashboard down. `markup` is accepted for Textual's signature and ignored."""
        super().notify(visible_lines(message), title=visible(title), severity=severity, timeout=timeout, markup=False)

    def on_notify(self, event: Notify) -> None:
        """Textual keeps every notification until its timeout; past MAX_TOASTS the oldest go
        (patches/toast_bound.py). Room for this one is made here: App's own handler, called after this one, adds it
        and refreshes the toasts."""
        drop_oldest(live_notifications(self), partial(drop_notification, self), keep=MAX_TOASTS - 1)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place an unexpected worker failure surfaces: as a notification, not a crash."""
        if event.state is WorkerState.ERROR:
            err = event.worker.error
            what = f"{type(err).__name__}: {err}"
            self.notify(what, title=f"{event.worker.name} failed", severity="error", markup=False)


def make_app(
    config: Config,
    fleet: FleetApi,
    *,
    frozen_time: float | None = None,
    ascii_mode: bool | None = None,
    config_path: Path | None = None,
    history: HistoryStore | None = None,
    recorder: Callable[[], Awaitable[None]] | None = None,
    hands: OperatorHands | None = None,
) -> HerdApp:
    """The one way to build the dashboard: the CLI, the tests, the demo and the screenshot script all call this.

    `config_path` is where the config file is or would go (default: `config.path`), said on the first run.
    """
    keep_no_dead_styles_caches()
    draw_only_what_changed()
    read_text_styles_as_rich()
    type_without_layout()
    measure_ascii_uncached()
    return HerdApp(
        config, fleet, frozen_time=frozen_time, ascii_mode=ascii_mode, config_path=config_path, history=history,
        recorder=recorder, hands=hands,
    )  # fmt: skip
