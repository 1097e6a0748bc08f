"""The model detail pane (key i) against real llama-server routers through the real Fleet: a managed router's loaded
model shows its child's RSS (as /proc has it), its command line with the secret redacted and its preset section;
on a narrow screen the pane is a screen of its own; an attached router's memory is "unknown", saying why."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from textual.pilot import Pilot

from app.config import Config, MachineConfig
from app.services.fleet import Fleet
from app.services.history.recorder import HistoryRecorder
from app.services.history.store import HistoryStore
from app.services.hosts.child_memory import ModelMemory
from app.services.machine.model_memory import ATTACHED
from app.ui.app import HerdApp, make_app
from app.ui.dashboard.detail_action import DOCKED_ID
from app.ui.dashboard.fleet_table import fleet_key
from app.ui.dashboard.keys import PALETTE
from app.ui.dashboard.model_table import ModelTable
from app.ui.palette import HerdCommands
from app.ui.screens.model_detail import REDACTED, ModelDetail, ModelDetailScreen
from tests.helpers.herd import Herd
from tests.helpers.router import RouterProc, preset_text
from tests.helpers.screen import screen_text
from tests.helpers.standin_fleet import NOW, demo_fleet
from tests.helpers.wait import wait_for

SECRET = "hf_detailpanesecret0042"


@pytest.fixture
def here(
    llama_server: str, tiny_models: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Config]:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    preset = tmp_path / "models.ini"
    extra = {"alpha": {"hf-token": SECRET}}
    preset.write_text(preset_text({"alpha": tiny_models["alpha"], "beta": tiny_models["beta"]}, extra))
    try:
        yield Config(machines=(MachineConfig(name="here", preset=str(preset), program=llama_server),))
    finally:
        Herd(root=tmp_path, config=tmp_path / "config.toml").stop_all()  # every router it started, by pid


def child_of(router_pid: int, model: str) -> psutil.Process:
    for c in psutil.Process(router_pid).children():
        cmd = c.cmdline()
        if "--alias" in cmd and cmd[cmd.index("--alias") + 1] == model:
            return c
    raise AssertionError(f"no child serving {model}")


async def loaded_app(cfg: Config) -> tuple[HerdApp, Fleet]:
    fleet = Fleet(cfg)
    return make_app(cfg, fleet), fleet


async def alpha_selected(app: HerdApp, fleet: Fleet, pilot: Pilot[Any]) -> ModelTable:
    """The router started, alpha loaded and its row under the cursor of the focused table."""
    await fleet.start_router("here")
    assert await fleet.load_and_wait("here", "alpha") is not None
    table = app.dashboard.model_table
    await wait_for(lambda: "alpha" in table.rows_now, timeout=15, pilot=pilot)
    table.show_row("alpha")
    table.focus()
    return table


async def test_the_pane_shows_a_managed_models_memory_command_line_and_preset(here: Config) -> None:
    app, fleet = await loaded_app(here)
    async with app.run_test(size=(180, 50)) as pilot:
        table = await alpha_selected(app, fleet, pilot)
        await pilot.press("i")
        pane = app.dashboard.query_one(f"#{DOCKED_ID}", ModelDetail)
        assert pane.refreshing

        def mem() -> ModelMemory | None:
            return pane.fetched.memory

        await wait_for(lambda: (m := mem()) is not None and m.rss, timeout=15, pilot=pilot, what="the child's RSS")
        got = mem()
        assert got is not None and got.rss is not None and got.rss > 0 and got.pid is not None
        # The pid is the router's child serving alpha, and its RSS is what /proc says of it (within 5 %).
        router_pid = app.state.get("here").view.pid
        assert router_pid is not None
        child = child_of(router_pid, "alpha")
        assert got.pid == child.pid
        assert abs(got.rss - child.memory_info().rss) <= 0.05 * child.memory_info().rss
        await wait_for(lambda: pane.fetched.section is not None, timeout=15, pilot=pilot, what="the preset section")
        # The log of its last load: the lines the log panel shows, which reach it with a later paint than the
        # pane's first fetch under load (seen in CI).
        loaded = "spawning server instance with name=alpha"
        await wait_for(lambda: loaded in pane.detail_text().plain, timeout=15, pilot=pilot, what="the load's log")
        text = pane.detail_text().plain
        assert "RSS " in text and "GPU not known (no nvidia-smi there)" in text, text
        assert "[alpha]" in text and f"hf-token = {REDACTED}" in text  # the section as the file has it, but that
        assert f"--hf-token {REDACTED}" in text, text
        assert "--alias alpha" in text
        assert SECRET not in text
        assert "alpha on here" in screen_text(app)  # docked beside the table, titled
        # The cursor moves: the pane follows it; `i` again closes it and its refresh stops with it.
        table.show_row("beta")
        await wait_for(lambda: pane.model_id == "beta", pilot=pilot)
        await wait_for(lambda: "not loaded" in pane.detail_text().plain, pilot=pilot)
        await pilot.press("i")
        await wait_for(lambda: not app.dashboard.query(f"#{DOCKED_ID}"), pilot=pilot, what="the pane closed")
        assert not pane.refreshing
        # The fleet view's memory column: the child's RSS, read while the view is shown.
        await pilot.press("f")
        ft = app.dashboard.fleet_table
        await wait_for(lambda: ft.reading_memory, pilot=pilot)
        cell = lambda: str(ft.get_cell(fleet_key("here", "alpha"), "memory"))  # noqa: E731
        await wait_for(lambda: cell().endswith("M"), timeout=15, pilot=pilot, what="alpha's memory in the fleet view")
        assert str(ft.get_cell(fleet_key("here", "beta"), "memory")) == ""  # not running: nothing to measure
        await pilot.press("f")
        await wait_for(lambda: not ft.reading_memory, pilot=pilot, what="no reading while the view is hidden")
        await wait_for(lambda: not [w for w in app.workers if w.group == "model-detail" and w.is_running], pilot=pilot)


async def test_on_a_narrow_screen_the_pane_is_a_screen_and_esc_closes_it(here: Config) -> None:
    app, fleet = await loaded_app(here)
    async with app.run_test(size=(110, 36)) as pilot:
        await alpha_selected(app, fleet, pilot)
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, ModelDetailScreen), pilot=pilot, what="the detail screen")
        screen = app.screen
        assert isinstance(screen, ModelDetailScreen)
        await wait_for(lambda: (m := screen.pane.fetched.memory) is not None and bool(m.rss), timeout=15, pilot=pilot)
        assert "RSS" in screen_text(app) and "alpha on here" in screen_text(app)
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, ModelDetailScreen), pilot=pilot)


async def test_an_attached_routers_memory_is_unknown_and_says_why(router: RouterProc, tmp_path: Path) -> None:
    """And the model's history with its reasons, as the dashboard recorded them."""
    cfg = Config(machines=(MachineConfig(name="box", url=router.url),))
    fleet = Fleet(cfg)
    store = HistoryStore(str(tmp_path / "h.db"))
    fleet.history, fleet.asked_by = store, "the dashboard"
    app = make_app(cfg, fleet, history=store, recorder=HistoryRecorder(fleet, store).run)
    async with app.run_test(size=(180, 50)) as pilot:
        table = app.dashboard.model_table
        await wait_for(lambda: "alpha" in table.rows_now, timeout=15, pilot=pilot)
        assert await fleet.load_and_wait("box", "alpha") is not None
        table.show_row("alpha")
        table.focus()
        await pilot.press("i")
        pane = app.dashboard.query_one(f"#{DOCKED_ID}", ModelDetail)
        await wait_for(lambda: pane.fetched.memory is not None, timeout=15, pilot=pilot, what="the memory answer")
        text = pane.detail_text().plain
        assert f"unknown: {ATTACHED}" in text, text
        # Its preset file is not reachable: the router's own rendering of the section is shown instead.
        await wait_for(lambda: pane.fetched.section_note != "reading…", pilot=pilot)
        assert "as the router renders it" in pane.detail_text().plain
        await wait_for(lambda: any(r.to_state == "loaded" for r in pane.fetched.history), timeout=15, pilot=pilot)
        row = next(r for r in pane.fetched.history if r.to_state == "loaded")
        text = pane.detail_text().plain
        assert f"{row.from_state} → loaded  {row.reason}" in text and row.reason, text
    store.close()


async def test_the_palette_offers_the_detail_and_a_stand_in_says_why_memory_is_unknown() -> None:
    fleet = demo_fleet()
    app = make_app(Config(), fleet, frozen_time=NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.dashboard.model_table
        await wait_for(lambda: len(table.rows_now) == 5, pilot=pilot)
        table.show_row("qwen2.5-coder-14b")
        await pilot.pause()
        commands = {title: cb for title, cb, _ in HerdCommands(app.screen)._commands()}
        title = PALETTE["model_detail"]
        assert title in commands
        run = commands[title]()
        if inspect.isawaitable(run):
            await run  # the palette's callback runs the action (a coroutine)
        await wait_for(lambda: isinstance(app.screen, ModelDetailScreen), pilot=pilot, what="the detail screen")
        screen = app.screen
        assert isinstance(screen, ModelDetailScreen) and screen.pane.model_id == "qwen2.5-coder-14b"
        await wait_for(lambda: screen.pane.fetched.rounds > 0, pilot=pilot)
        text = screen.pane.detail_text().plain
        assert "unknown: the stand-in fleet has no processes to measure" in text, text
        assert "spawning server instance with name=qwen2.5-coder-14b" in text  # its last load's log lines
        assert "srv  load_model: model loaded" in text
        await pilot.press("i")  # i closes the screen as it opened it
        await wait_for(lambda: not isinstance(app.screen, ModelDetailScreen), pilot=pilot)
