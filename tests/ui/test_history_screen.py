"""The history screen (h): the fleet's transitions newest first, filterable by machine, model and reason, shown as
plain text."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable, Input

from app.config import Config, MachineConfig
from app.services.core.fleet_events import Problem
from app.services.fleet import Fleet
from app.services.history.recorder import HistoryRecorder
from app.services.history.store import HistoryRow, HistoryStore
from app.ui.app import make_app
from app.ui.dashboard.failure_history import LINKED_FOR, FailureLink
from app.ui.screens.history import HistoryScreen, matches
from tests.helpers.router import RouterProc
from tests.helpers.screen import record_notifications, screen_text
from tests.helpers.standin_fleet import NOW, demo_fleet
from tests.helpers.wait import wait_for


def rows() -> list[HistoryRow]:
    def r(ago: float, machine: str, model: str, was: str, to: str, reason: str, detail: str) -> HistoryRow:
        return HistoryRow(NOW - ago, machine, "default", model, was, to, reason, detail, f"k:{ago}")

    return [
        r(600, "gpu-1", "chat-small", "loaded", "unloaded", "evicted", "models_max limit reached, for chat-big"),
        r(500, "gpu-1", "chat-big", "unloaded", "loading", "requested", "by the dashboard"),
        r(400, "gpu-2", "[bold]coder[/bold]", "loaded", "failed", "crashed", "exit status 1; last lines: E \x1b]0;x"),
        r(300, "gpu-2", "embed", "loaded", "unloaded", "preset reload", "its preset source was updated or removed"),
        r(200, "gpu-2", "", "running", "exited", "router exited", "router (pid 42) exited without being asked"),
    ]


def test_filter_words() -> None:
    evicted, asked, crashed, reloaded, exited = rows()
    assert matches(evicted, "machine=gpu-1 reason=evicted")
    assert not matches(asked, "reason=evicted")
    assert matches(reloaded, "reason=preset") and matches(reloaded, "reason=preset-reload")
    assert matches(crashed, "model=[bold]coder[/bold]") and not matches(crashed, "model=coder")
    assert matches(exited, "pid 42") and not matches(exited, "machine=gpu-1")


async def test_h_shows_every_transition_newest_first_and_filters(tmp_path: Path) -> None:
    store = HistoryStore(str(tmp_path / "h.db"), clock=lambda: NOW)
    await store.add(rows())
    app = make_app(Config(), demo_fleet(), frozen_time=NOW, history=store)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.press("h")
        await wait_for(lambda: isinstance(app.screen, HistoryScreen), pilot=pilot)
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        table = screen.query_one("#history-table", DataTable)
        await wait_for(lambda: table.row_count == 5, pilot=pilot)
        first = [str(c) for c in table.get_row_at(0)]
        assert first[1:5] == ["gpu-2", "(router)", "running -> exited", "router exited"]
        # the rows are in the table before the new screen is first composited: wait for the paint
        await wait_for(lambda: "[bold]coder[/bold]" in screen_text(app), pilot=pilot)  # markup in an id, shown as it is
        text = screen_text(app)
        assert "\x1b" not in text and "␛]0;x" in text
        assert "for chat-big" in text and "10m ago" in text

        await pilot.press("slash")
        assert isinstance(app.focused, Input)
        await pilot.press(*"reason=evicted")
        await wait_for(lambda: table.row_count == 1, pilot=pilot)
        assert str(table.get_row_at(0)[2]) == "chat-small"
        screen.query_one(Input).value = "machine=gpu-2"
        await wait_for(lambda: table.row_count == 3, pilot=pilot)
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, HistoryScreen), pilot=pilot)
    store.close()


async def test_without_a_history_the_screen_says_so() -> None:
    app = make_app(Config(), demo_fleet(), frozen_time=NOW)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.press("h")
        await wait_for(lambda: isinstance(app.screen, HistoryScreen), pilot=pilot)
        await wait_for(lambda: "no history here" in screen_text(app), pilot=pilot)


async def test_the_dashboard_records_its_own_load_and_h_shows_it(router: RouterProc, tmp_path: Path) -> None:
    """The real fleet and router: `l` on a model, then `h` shows the load, requested by the dashboard."""
    cfg = Config(machines=(MachineConfig(name="box", url=router.url),))
    fleet = Fleet(cfg)
    store = HistoryStore(str(tmp_path / "h.db"))
    fleet.history, fleet.asked_by = store, "the dashboard"
    recorder = HistoryRecorder(fleet, store)
    app = make_app(cfg, fleet, history=store, recorder=recorder.run)
    async with app.run_test(size=(160, 40)) as pilot:
        table = app.dashboard.model_table
        await wait_for(lambda: "alpha" in table.rows_now, timeout=15, pilot=pilot)
        table.move_cursor(row=table.get_row_index("alpha"))
        await pilot.press("l")

        async def recorded() -> bool:
            return any(r.to_state == "loaded" for r in await store.query(model="alpha"))

        await wait_for(recorded, timeout=30, pilot=pilot)
        await pilot.press("h")
        await wait_for(lambda: isinstance(app.screen, HistoryScreen), pilot=pilot)
        await wait_for(lambda: "by the dashboard" in screen_text(app), timeout=10, pilot=pilot)
        assert "unloaded -> loading" in screen_text(app) and "loading -> loaded" in screen_text(app)
    store.close()


async def test_a_model_failure_toast_leads_to_that_models_history(tmp_path: Path) -> None:
    store = HistoryStore(str(tmp_path / "h.db"), clock=lambda: NOW)
    crash = HistoryRow(NOW - 5, "workstation", "default", "broken", "loading", "failed", "crashed", "exit 1", "k:w")
    await store.add([*rows(), crash])
    fleet = demo_fleet()
    app = make_app(Config(), fleet, frozen_time=NOW, history=store)
    seen = record_notifications(app)
    async with app.run_test(size=(160, 40), notifications=True) as pilot:
        await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 5, pilot=pilot)
        fleet.emit(Problem("workstation", "broken failed to load on workstation (exit code 1)", model="broken"))
        await wait_for(lambda: any(sev == "error" for sev, _, _ in seen), pilot=pilot)
        _, _, message = next(s for s in seen if s[0] == "error")
        assert message.endswith(" · h for its history")
        await pilot.press("h")
        await wait_for(lambda: isinstance(app.screen, HistoryScreen), pilot=pilot)
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        assert screen.query_one(Input).value == "machine=workstation model=broken"
        table = screen.query_one("#history-table", DataTable)
        await wait_for(lambda: table.row_count == 1, pilot=pilot)
        assert [str(c) for c in table.get_row_at(0)][1:5] == ["workstation", "broken", "loading -> failed", "crashed"]
    store.close()


def test_the_link_to_a_failure_lasts_a_while_and_then_h_opens_the_whole_history() -> None:
    link = FailureLink()
    assert link.query(100.0) == ""
    link.note("box", "alpha", 100.0)
    assert link.query(100.0 + LINKED_FOR) == "machine=box model=alpha"
    assert link.query(100.0 + LINKED_FOR + 1) == ""


async def test_without_a_history_a_failure_toast_names_no_history_key() -> None:
    fleet = demo_fleet()
    app = make_app(Config(), fleet, frozen_time=NOW)
    seen = record_notifications(app)
    async with app.run_test(size=(160, 40), notifications=True) as pilot:
        await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 5, pilot=pilot)
        fleet.emit(Problem("workstation", "broken failed to load on workstation (exit code 1)", model="broken"))
        await wait_for(lambda: any(sev == "error" for sev, _, _ in seen), pilot=pilot)
        assert all("history" not in m for sev, _, m in seen if sev == "error")
