"""A dimmed key pressed anyway says why it does nothing ("gpu-box is unreachable: ...", "shared is attach-only")."""

from __future__ import annotations

from typing import Any

from app.config import Config
from app.services.core.router_types import RouterState
from app.ui.app import HerdApp, make_app
from tests.helpers.standin_fleet import NOW, StandInFleet, demo_fleet, view
from tests.helpers.wait import wait_for

SIZE = (120, 40)


def warnings(app: HerdApp) -> list[str]:
    seen: list[str] = []
    notify = app.notify

    def rec(message: str, *, severity: Any = "information", title: str = "", **kw: Any) -> None:
        if severity == "warning" and title != "machine unreachable":  # that one is said when it goes, unasked
            seen.append(message)
        notify(message, severity=severity, title=title, **kw)

    app.notify = rec  # type: ignore[method-assign]
    return seen


async def test_start_on_an_unreachable_machine_says_why() -> None:
    fleet = demo_fleet()
    app = make_app(Config(), fleet, frozen_time=NOW)
    seen = warnings(app)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 5, pilot=pilot)
        await pilot.press("3")  # laptop: unreachable
        await wait_for(lambda: app.dashboard.selected_machine == "laptop", pilot=pilot)
        await pilot.press("s")
        await wait_for(lambda: bool(seen), pilot=pilot)
        reason = fleet.views["laptop"].connection_reason
        assert reason and seen == [f"laptop is unreachable: {reason}"]
        assert not any(c[0] == "start_router" for c in fleet.calls)


async def test_start_on_an_attach_only_machine_and_load_of_a_loaded_model_say_why() -> None:
    fleet = demo_fleet()
    fleet.views = {"shared": view("shared", managed=False, router_state=RouterState.ATTACHED)}
    fleet.model_lists = {"shared": fleet.model_lists["workstation"]}
    app = make_app(Config(), StandInFleet(views=fleet.views, model_lists=fleet.model_lists), frozen_time=NOW)
    seen = warnings(app)
    async with app.run_test(size=SIZE) as pilot:
        table = app.dashboard.model_table
        await wait_for(lambda: len(table.rows_now) == 5, pilot=pilot)
        await pilot.press("s")
        await wait_for(lambda: len(seen) == 1, pilot=pilot)
        assert seen == ["shared is attach-only: not ours to start"]
        table.focus()
        table.move_cursor(row=table.get_row_index("qwen2.5-coder-14b"))  # loaded
        await pilot.press("l")
        await wait_for(lambda: len(seen) == 2, pilot=pilot)
        assert seen[1] == "qwen2.5-coder-14b is already loaded"
