"""The first run, without a config file: one machine, "local"; the dashboard says where the config goes, `s` starts
a router there with an empty preset, and without any llama-server it says how to get one instead of failing.

Each test has its own XDG_STATE_HOME, so the router record and the empty preset are the test's own; a router a test
starts is stopped by the test (and, should it fail half-way, by pid).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app.config import Config, MachineConfig
from app.services.core.fleet_events import MachineChanged, MachineView
from app.services.core.host_types import Connection
from app.services.core.router_types import RouterState
from app.services.fleet import Fleet
from app.services.lifecycle.llama_server_binary import HOW_TO_GET, program_not_found
from app.ui.app import HerdApp, make_app
from app.ui.dashboard.first_run_notice import FirstRunNotice
from app.ui.state.herd_state import HerdState
from tests.helpers.herd import Herd
from tests.helpers.screen import record_notifications, screen_text
from tests.helpers.standin_fleet import NOW, StandInFleet, demo_fleet, view
from tests.helpers.wait import wait_for

SIZE = (120, 40)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An isolated state directory; whatever router a test leaves behind is stopped by pid."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    try:
        yield tmp_path
    finally:
        Herd(root=tmp_path, config=tmp_path / "config.toml").stop_all()


def first_run_app(home: Path) -> HerdApp:
    config = Config(path=home / "config.toml")  # what load_config returns for a missing file
    return make_app(config, Fleet(config))


def notice(app: HerdApp) -> str:
    widget = app.query_one("#first-run", FirstRunNotice)
    return str(widget.content) if widget.display else ""


def hint(app: HerdApp) -> str:
    return app.dashboard.machines.hint.plain


@pytest.mark.usefixtures("llama_server")  # the notice offers `s` only where a llama-server is found
async def test_the_first_run_says_where_the_config_goes(home: Path) -> None:
    app = first_run_app(home)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: app.state.get("local").view.router_state is RouterState.ABSENT, pilot=pilot)
        await pilot.pause()
        assert app.first_run and app.state.names == ["local"]
        text = notice(app)
        assert str(home / "config.toml") in text
        assert "(llamaherd config example prints one with every key)" in text
        assert "s  starts a router here with an empty preset" in text
        screen = screen_text(app)
        assert "First run" in screen and "llamaherd config example" in screen
        assert hint(app) == ""  # nothing is missing yet


async def test_the_path_given_to_make_app_wins_and_help_names_it(tmp_path: Path) -> None:
    path = tmp_path / "elsewhere" / "config.toml"
    config = Config()  # no path: a config built in code
    app = make_app(config, StandInFleet(views={"local": view("local")}), frozen_time=NOW, config_path=path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert str(path) in notice(app)
        await pilot.press("question_mark")
        await wait_for(lambda: str(path) in screen_text(app), pilot=pilot)


async def test_a_configured_fleet_shows_no_first_run_notice() -> None:
    app = make_app(Config(), demo_fleet(), frozen_time=NOW)  # machines the config does not name: not a first run
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert not app.first_run
        assert notice(app) == "" and hint(app) == ""


async def test_s_starts_a_router_with_an_empty_preset(home: Path, llama_server: str) -> None:
    app = first_run_app(home)
    fleet = app.fleet
    assert isinstance(fleet, Fleet)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: app.state.get("local").view.router_state is RouterState.ABSENT, pilot=pilot)
        await pilot.press("s")
        await wait_for(lambda: app.state.get("local").view.router_state is RouterState.RUNNING, timeout=40, pilot=pilot)
        await wait_for(lambda: "running" in app.dashboard.machines.card("local").render().plain, pilot=pilot)
        preset = home / "state" / "llamaherd" / "routers" / "default" / "models.ini"
        made = preset.read_text()
        assert made.startswith("version = 1\n") and "made by llamaherd" in made and made.endswith("[*]\n")
        await wait_for(lambda: "starts a router" not in notice(app), pilot=pilot)  # nothing left to start
        assert str(home / "config.toml") in notice(app)
        await fleet.stop_router("local")
        await wait_for(lambda: app.state.get("local").view.router_state is RouterState.STOPPED, timeout=20, pilot=pilot)
        await wait_for(lambda: "starts a router" in notice(app), pilot=pilot)


async def test_without_llama_server_the_start_says_how_to_get_one(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLAMA_SERVER", str(home / "no" / "llama-server"))  # find_llama_server -> None
    app = first_run_app(home)
    notes = record_notifications(app)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(lambda: app.state.get("local").view.router_state is RouterState.ABSENT, pilot=pilot)
        await pilot.press("s")
        await wait_for(lambda: app.state.get("local").missing_program, pilot=pilot)
        # The toast is one line (failure toasts are); the how-to is in the machines pane, in full.
        await wait_for(
            lambda: any(sev == "error" and "llama-server was not found" in msg for sev, _, msg in notes), pilot=pilot
        )
        await wait_for(lambda: hint(app) == HOW_TO_GET and "No llama-server here yet" in notice(app), pilot=pilot)
        assert hint(app) == HOW_TO_GET  # the machines pane says how, in full
        assert "No llama-server here yet" in notice(app) and "starts a router" not in notice(app)
        assert app.state.get("local").problem == "start router: llama-server was not found"
        assert "llama-server was not found" in screen_text(app)
        # Nothing crashed and nothing was started: the dashboard still answers keys.
        await pilot.press("f")
        await pilot.press("f")
        assert app.is_running and app.state.get("local").view.router_state is RouterState.ABSENT
        assert not (home / "state" / "llamaherd" / "routers" / "default" / "record.json").exists()
        assert len([n for n in notes if n[0] == "error"]) == 1  # said once, not once per path it took


class FleetThatLooks(Fleet):
    """The Fleet with the method the dashboard asks for before any start (llama_server_found), answering `found`."""

    def __init__(self, config: Config, found: str | None) -> None:
        super().__init__(config)
        self.found = found

    async def llama_server_found(self, machine: str) -> str | None:
        return self.found


@pytest.mark.parametrize("found", [None, "/opt/llama/bin/llama-server"])
async def test_a_fleet_that_can_look_is_asked_before_any_start(home: Path, found: str | None) -> None:
    config = Config(path=home / "config.toml")
    app = make_app(config, FleetThatLooks(config, found))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: app.state.get("local").view.router_state is RouterState.ABSENT, pilot=pilot)
        await pilot.pause(0.1)
        if found is None:
            await wait_for(lambda: hint(app) == HOW_TO_GET, pilot=pilot)
            assert "No llama-server here yet" in notice(app)
        else:
            assert hint(app) == "" and "starts a router" in notice(app)


def test_the_missing_program_is_noted_once_and_cleared_by_a_running_router() -> None:
    state = HerdState(["local"])
    action = "start router on local"
    state.note_problem("local", f"{action}: {HOW_TO_GET}", action=action, error=program_not_found())
    st = state.get("local")
    assert st.missing_program and st.problem == "start router: llama-server was not found"
    running = MachineView("local", "local", Connection.LOCAL, router_state=RouterState.RUNNING)
    state.apply([MachineChanged("local", running)], NOW)
    assert not st.missing_program and st.problem == ""


def test_a_configured_local_machine_is_not_a_first_run() -> None:
    config = Config(machines=(MachineConfig(name="local"),))
    app = make_app(config, Fleet(config))
    assert not app.first_run
