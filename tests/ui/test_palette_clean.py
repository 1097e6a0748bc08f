"""The palette offers what applies, llamaherd's own first: no "Load" for a model already running, no "Unload" for one
that is not; a palette load asks what `l` asks (here: it evicts the one running model, so it asks first); Textual's
own commands come last, named as Textual's, without Keys and Maximize."""

from __future__ import annotations

import dataclasses

from app.ui.palette import HerdCommands
from app.ui.screens.confirm import ConfirmScreen
from tests.helpers.standin_fleet import demo_fleet
from tests.helpers.wait import wait_for
from tests.ui.test_dashboard import SIZE, app_for


async def test_only_what_applies_llamaherds_first_and_a_load_asks_like_l() -> None:
    fleet = demo_fleet()
    fleet.views["gpu-box"] = dataclasses.replace(fleet.views["gpu-box"], models_max=1)  # a load there evicts
    app = app_for(fleet)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 5, pilot=pilot)
        titles = [title for title, _, _ in HerdCommands(app.screen)._commands()]
        assert "Unload llama-3.3-70b on gpu-box" in titles and "Load llama-3.3-70b on gpu-box" not in titles
        assert "Load phi-4 on gpu-box" in titles and "Unload phi-4 on gpu-box" not in titles
        textual = [t for t in titles if t.startswith("Textual: ")]
        assert set(textual) == {"Textual: Theme", "Textual: Quit", "Textual: Screenshot"}
        assert titles.index(textual[0]) > max(i for i, t in enumerate(titles) if not t.startswith("Textual: "))
        assert not any(t in titles for t in ("Keys", "Maximize", "Textual: Keys", "Textual: Maximize"))
        load = next(cb for title, cb, _ in HerdCommands(app.screen)._commands() if title == "Load phi-4 on gpu-box")
        load()
        await wait_for(lambda: isinstance(app.screen, ConfirmScreen), pilot=pilot, what="the question `l` asks")
        assert ("load", "gpu-box", "phi-4") not in fleet.calls
        await pilot.press("y")
        await wait_for(lambda: ("load", "gpu-box", "phi-4") in fleet.calls, pilot=pilot, what="the load, once agreed")
