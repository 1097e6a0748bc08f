"""The title line is repainted without a layout pass (its size never changes) and still shows each new count."""

from __future__ import annotations

from app.config import Config
from app.services.core.fleet_events import ModelsChanged
from app.services.core.router_types import ModelState
from app.ui.app import make_app
from tests.helpers.screen import screen_text
from tests.helpers.standin_fleet import demo_fleet, workstation_models
from tests.helpers.wait import wait_for
from tests.ui.test_dashboard import SIZE, replace_model


async def test_the_title_shows_a_changed_running_count() -> None:
    fleet = demo_fleet()
    app = make_app(Config(), fleet)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: "4/7 models running" in screen_text(app).splitlines()[0], pilot=pilot)
        models = workstation_models()
        fleet.emit(ModelsChanged("workstation", replace_model(models, "qwen2.5-coder-14b", state=ModelState.UNLOADED)))
        await wait_for(lambda: "3/7 models running" in screen_text(app).splitlines()[0], pilot=pilot)
        fleet.emit(ModelsChanged("workstation", models))
        await wait_for(lambda: "4/7 models running" in screen_text(app).splitlines()[0], pilot=pilot)
