"""`+` adds a machine from the dashboard: the form's table is appended to the config file (everything else in it
kept), the loader's refusal is said in the form with nothing written, and the machine joins the running fleet
(Fleet.add_machine): its card shows, it is selected, and its follower reports on it, without a restart.

The real Fleet, a local machine, a tmp config file and XDG_STATE_HOME: no router is started (the new machine's own
router key has none, which the follower says as "absent")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import Input

from app.config import MachineConfig, load_config
from app.errors import ConfigError
from app.services.core.router_types import RouterState
from app.services.fleet import Fleet
from app.services.history.scope import router_scope, scope_names
from app.services.history.store import HistoryStore
from app.ui.app import make_app
from app.ui.screens.add_machine import AddMachineScreen
from tests.helpers.herd import Herd
from tests.helpers.screen import record_notifications, screen_text
from tests.helpers.wait import wait_for

CONFIG = """\
# the operator's own words, kept
[[machines]]
name = "here"   # this box
router = "add-machine-test"

[ui]
log_lines = 2000
"""


@pytest.fixture
def config_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    path = tmp_path / "config.toml"
    path.write_text(CONFIG)
    path.chmod(0o600)
    try:
        yield path
    finally:
        Herd(root=tmp_path, config=path).stop_all()  # nothing is started; should a test fail half-way, by pid


async def type_into(pilot, field: str, text: str) -> None:  # type: ignore[no-untyped-def]
    screen = pilot.app.screen
    assert isinstance(screen, AddMachineScreen)
    screen.query_one(f"#{field}").focus()
    await pilot.press(*text)


async def test_a_machine_added_from_the_dashboard_is_written_and_followed_without_a_restart(config_path: Path) -> None:
    config = load_config(config_path)
    fleet = Fleet(config)
    store = HistoryStore(names=scope_names(config.effective_machines))
    app = make_app(config, fleet, history=store)
    async with app.run_test(size=(140, 45)) as pilot:
        said = record_notifications(app)
        await wait_for(lambda: app.state.get("here").view.router_state is RouterState.ABSENT, pilot=pilot)
        await pilot.press("plus")
        await wait_for(lambda: isinstance(app.screen, AddMachineScreen), pilot=pilot)
        screen = app.screen
        # A refusal first: the loader's words under the form, nothing written, the form still open.
        await type_into(pilot, "name", "here")
        await pilot.press("ctrl+s")
        await wait_for(lambda: "duplicate machine name 'here'" in screen_text(app), pilot=pilot)
        assert config_path.read_text() == CONFIG and app.screen is screen
        # Then a good one: a second local router, by another key.
        await pilot.press(*["backspace"] * 4, *"bench2")
        await type_into(pilot, "target", "local")
        await pilot.press("enter")  # from the target field: on to the key's
        await pilot.press("enter")  # from the last field: add
        await wait_for(lambda: not isinstance(app.screen, AddMachineScreen), pilot=pilot)
        text = config_path.read_text()
        assert text.startswith(CONFIG) and '[[machines]]\nname = "bench2"' in text
        assert [m.name for m in load_config(config_path).machines] == ["here", "bench2"]
        assert config_path.stat().st_mode & 0o777 == 0o600
        assert fleet.names == ["here", "bench2"]
        added = app.config.machine("bench2")  # what the dashboard reads of a machine (its hub, ...)
        assert store.names is not None and store.names[router_scope(added)] == "bench2"  # its history, by name
        # Followed at once: its follower looked (no router under its key on this machine), its card is on screen.
        await wait_for(lambda: fleet.view("bench2").router_state is RouterState.ABSENT, pilot=pilot)
        await wait_for(lambda: app.state.get("bench2").view.router_state is RouterState.ABSENT, pilot=pilot)
        assert app.dashboard.machines.names == ["here", "bench2"]
        await wait_for(lambda: app.dashboard.selected_machine == "bench2", pilot=pilot)
        await wait_for(lambda: "bench2" in screen_text(app), pilot=pilot)
        assert ("information", "", f"bench2 added to {config_path}") in said
    store.close()


async def test_hosts_of_ssh_config_complete_and_escape_adds_nothing(
    config_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = config_path.parent / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "config").write_text("Host gpu-box\n  HostName 10.0.0.5\nHost *.lan\nHost laptop\n")
    monkeypatch.setenv("HOME", str(home))
    config = load_config(config_path)
    fleet = Fleet(config)
    app = make_app(config, fleet)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("plus")
        await wait_for(lambda: isinstance(app.screen, AddMachineScreen), pilot=pilot)
        await wait_for(lambda: "hosts in ~/.ssh/config" in screen_text(app), pilot=pilot)
        assert "gpu-box, laptop" in screen_text(app)
        await type_into(pilot, "name", "later")
        await type_into(pilot, "target", "ann@gp")
        await pilot.press("right")  # takes the suggestion
        target = app.screen.query_one("#target", Input)
        await wait_for(lambda: target.value == "ann@gpu-box", pilot=pilot)
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, AddMachineScreen), pilot=pilot)
        assert config_path.read_text() == CONFIG and fleet.names == ["here"]


def test_the_fleet_refuses_a_second_machine_of_a_name(config_path: Path) -> None:
    fleet = Fleet(load_config(config_path))
    with pytest.raises(ConfigError, match="already a machine named 'here'"):
        fleet.add_machine(MachineConfig(name="here", router="other"))
    assert fleet.names == ["here"] and fleet.config.machines[0].router == "add-machine-test"
