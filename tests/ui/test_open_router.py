"""The machines pane says when a router runs without an API key, and how to fix it (issue 10)."""

from __future__ import annotations

import dataclasses

from app.config import Config
from app.services.core.fleet_events import MachineChanged
from app.ui.app import make_app
from tests.helpers.screen import screen_text
from tests.helpers.standin_fleet import NOW, demo_fleet
from tests.helpers.wait import wait_for


async def test_an_open_router_is_shown_with_the_fix() -> None:
    fleet = demo_fleet()
    app = make_app(Config(), fleet, frozen_time=NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 5, pilot=pilot)
        assert "open: no API key" not in screen_text(app)
        up = fleet.views["gpu-box"]
        fleet.emit(MachineChanged("gpu-box", dataclasses.replace(up, open_router=True)))
        await wait_for(lambda: "open: no API key" in screen_text(app), pilot=pilot)
        assert "x then s" in screen_text(app)
        fleet.emit(MachineChanged("gpu-box", up))
        await wait_for(lambda: "open: no API key" not in screen_text(app), pilot=pilot)
