"""A card's error is tied to the state that caused it and leaves with it (issue 38, case 2): `load chat-medium:
the router is not running` stayed on the card minutes after the router ran again; `broken failed to load` stayed
after a reload listed it unloaded; with the router stopped, `l` stayed enabled and could only fail."""

from __future__ import annotations

import dataclasses

from app.config import Config
from app.services.core.errors import ModelFailed, RouterNotRunning
from app.services.core.fleet_events import MachineChanged, ModelsChanged, Problem
from app.services.core.router_types import ModelState, RouterState
from app.ui.app import HerdApp, make_app
from tests.helpers.standin_fleet import NOW, demo_fleet, workstation_models
from tests.helpers.wait import wait_for
from tests.ui.test_disabled_keys import warnings

SIZE = (120, 40)


def card(app: HerdApp) -> str:
    """The workstation card's words on one line (a problem wraps)."""
    return " ".join(app.dashboard.machines.card("workstation").render().plain.split())


async def test_a_failure_the_stopped_router_caused_leaves_when_it_runs_again() -> None:
    fleet = demo_fleet()
    app = make_app(Config(), fleet, frozen_time=NOW)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 5, pilot=pilot)
        running = fleet.views["workstation"]
        stopped = dataclasses.replace(running, router_state=RouterState.STOPPED, router_reason="stopped on request")
        fleet.emit(MachineChanged("workstation", stopped))
        error = RouterNotRunning("workstation", "stopped", "stopped on request")
        fleet.emit(Problem("workstation", f"load mistral-7b: {error}", "mistral-7b", action="load", error=error))
        await wait_for(lambda: "the router is not running" in card(app), pilot=pilot)
        fleet.emit(MachineChanged("workstation", dataclasses.replace(running, started_at=NOW)))
        await wait_for(lambda: "not running" not in card(app), pilot=pilot, what="the error gone with its cause")


async def test_a_models_failure_leaves_when_the_router_lists_it_unloaded_again() -> None:
    fleet = demo_fleet()
    app = make_app(Config(), fleet, frozen_time=NOW)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 5, pilot=pilot)
        error = ModelFailed("broken", 1)
        fleet.emit(Problem("workstation", "broken failed to load on workstation (exit code 1)", "broken", error=error))
        await wait_for(lambda: "broken failed to load" in card(app), pilot=pilot)
        # a model of another name changing leaves it
        fleet.emit(ModelsChanged("workstation", workstation_models()))
        await pilot.pause()
        assert "broken failed to load" in card(app)
        # a preset reload lists it unloaded, no longer failed
        models = tuple(
            dataclasses.replace(m, state=ModelState.UNLOADED, failed=False, exit_code=None) if m.id == "broken" else m
            for m in workstation_models()
        )
        fleet.emit(ModelsChanged("workstation", models))
        await wait_for(lambda: "broken failed" not in card(app), pilot=pilot, what="the failure gone")


async def test_load_is_disabled_while_the_router_is_stopped_and_says_why() -> None:
    fleet = demo_fleet()
    app = make_app(Config(), fleet, frozen_time=NOW)
    seen = warnings(app)
    async with app.run_test(size=SIZE) as pilot:
        table = app.dashboard.model_table
        await wait_for(lambda: len(table.rows_now) == 5, pilot=pilot)
        stopped = dataclasses.replace(
            fleet.views["workstation"], router_state=RouterState.STOPPED, router_reason="stopped on request"
        )
        fleet.emit(MachineChanged("workstation", stopped))
        await wait_for(lambda: app.state.get("workstation").view.router_state is RouterState.STOPPED, pilot=pilot)
        table.focus()
        table.move_cursor(row=table.get_row_index("mistral-7b"))  # unloaded: `l` would load it
        await pilot.press("l")
        await wait_for(lambda: bool(seen), pilot=pilot)
        assert seen == ["workstation's router is stopped (stopped on request): nothing loads or unloads until it runs"]
        assert not any(c[0] == "load" for c in fleet.calls)
