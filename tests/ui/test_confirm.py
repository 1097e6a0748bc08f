"""The stop confirmation sits in the middle of the screen, whole: a long list of models scrolls inside the box
rather than pushing the box off-centre (a scrollbar on the screen) and its title and first lines off the top."""

from __future__ import annotations

from typing import Any

import pytest
from textual.pilot import Pilot

from app.config import Config
from app.services.core.router_types import ModelState
from app.ui.app import HerdApp, make_app
from app.ui.screens.confirm import ConfirmScreen
from tests.helpers.standin_fleet import NOW, StandInFleet, demo_fleet, model
from tests.helpers.wait import wait_for


def fleet_running(n: int) -> StandInFleet:
    fleet = demo_fleet()
    if n:
        fleet.model_lists["workstation"] = tuple(model(f"model-{i:02}", ModelState.LOADED) for i in range(n))
    return fleet


async def ask_to_stop(app: HerdApp, pilot: Pilot[Any]) -> None:
    await wait_for(lambda: app.dashboard.model_table.rows_now, pilot=pilot)
    await pilot.press("x")
    await wait_for(lambda: isinstance(app.screen, ConfirmScreen) and app.screen.query("#confirm-box"), pilot=pilot)
    await pilot.pause()


@pytest.mark.parametrize("size", [(80, 24), (140, 40), (100, 20)], ids=["80x24", "140x40", "100x20"])
@pytest.mark.parametrize("running", [0, 40], ids=["demo", "40-models"])
async def test_the_stop_confirmation_is_centred_and_whole(size: tuple[int, int], running: int) -> None:
    app = make_app(Config(), fleet_running(running), frozen_time=NOW)
    async with app.run_test(size=size) as pilot:
        await ask_to_stop(app, pilot)
        box = app.screen.query_one("#confirm-box").region
        width, height = size
        assert box.y >= 0 and box.bottom <= height and box.x >= 0 and box.right <= width
        assert abs(box.x - (width - box.right)) <= 1, box  # as much room left as right
        assert abs(box.y - (height - box.bottom)) <= 1, box  # and above as below
        for button in app.screen.query("Button"):
            assert button.region.bottom <= box.bottom
        await pilot.press("n")
        await wait_for(lambda: not isinstance(app.screen, ConfirmScreen), pilot=pilot)


def test_snapshot_stop_confirmation(snap_compare: Any) -> None:
    app = make_app(Config(), fleet_running(0), frozen_time=NOW)

    async def ask(pilot: Pilot[Any]) -> None:
        await ask_to_stop(app, pilot)
        app.clear_notifications()  # the laptop's outage toast (test_unreachable.py)
        await pilot.pause(0.1)

    assert snap_compare(app, terminal_size=(80, 24), run_before=ask)
