"""The palette's "Load MODEL on MACHINE" entries carry the free memory and the eviction (issue 13, item 5), even
where no estimate can be made (the stand-in fleet reads no headers): the verdicts are in test_fit_ui.py."""

from __future__ import annotations

import dataclasses

from tests.helpers.screen import screen_text
from tests.helpers.standin_fleet import demo_fleet
from tests.helpers.wait import wait_for
from tests.ui.test_dashboard import SIZE, app_for


async def test_load_entry_names_free_memory_and_eviction() -> None:
    fleet = demo_fleet()
    # one instance at most on gpu-box: loading another model there evicts the one running
    fleet.views["gpu-box"] = dataclasses.replace(fleet.views["gpu-box"], models_max=1)
    app = app_for(fleet)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 5, pilot=pilot)
        running = [m.id for m in fleet.model_lists["gpu-box"] if m.state.running]
        idle = [m.id for m in fleet.model_lists["gpu-box"] if not m.state.running]
        assert len(running) == 1 and idle, (running, idle)
        await pilot.press("ctrl+p")
        await pilot.press(*f"Load {idle[0]} on gpu")
        await pilot.pause(0.5)
        # the help line wraps where the palette is narrow: its words, on one line
        await wait_for(lambda: f"evicts {running[0]}" in " ".join(screen_text(app).split()), pilot=pilot)
        assert "GiB RAM free" in screen_text(app)
