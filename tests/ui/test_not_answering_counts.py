"""Loaded models that stopped answering (issue 35) are counted where trouble is counted: on a compact machine line
(`◌N`, `?N` in ASCII), in the title ("1 not answering model") and by "problems first" (after a router that is down,
before failed models); they clear when the models answer again."""

from __future__ import annotations

import re

from app.config import Config
from app.services.activity.poll import ActivityChanged
from app.ui.app import make_app
from tests.helpers.screen import screen_text
from tests.helpers.wait import wait_for
from tests.ui.test_compact_machines import TWENTY, fleet_of


def line_of(app: object, name: str) -> str:
    return next((ln for ln in screen_text(app).splitlines() if re.search(rf"\b{name}\b", ln)), "")  # type: ignore[arg-type]


async def test_a_compact_line_and_the_title_count_models_not_answering() -> None:
    fleet = fleet_of(12)
    app = make_app(Config(), fleet)
    async with app.run_test(size=(160, 50)) as pilot:
        pane = app.dashboard.machines
        await wait_for(lambda: pane.compact and "box4" in screen_text(app), pilot=pilot, what="compact for twelve")
        assert "◌" not in screen_text(app)
        fleet.emit(ActivityChanged("box4", (), not_answering=(TWENTY[0].id, TWENTY[1].id)))
        await wait_for(lambda: "◌2" in line_of(app, "box4"), pilot=pilot, what="◌2 on box4's line")
        title = screen_text(app).splitlines()[0]
        assert "2 not answering models" in title, title
        await pilot.press("exclamation_mark")
        await wait_for(lambda: pane.names[0] == "box4", pilot=pilot, what="box4 first: trouble")
        fleet.emit(ActivityChanged("box4", (), not_answering=()))
        await wait_for(lambda: "◌" not in screen_text(app), pilot=pilot, what="answering again: no count")
        assert "not answering" not in screen_text(app).splitlines()[0]


async def test_ascii_lines_say_it_with_a_question_mark() -> None:
    fleet = fleet_of(3)
    app = make_app(Config(), fleet, ascii_mode=True)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press("c")
        await wait_for(lambda: app.dashboard.machines.compact and "box1" in screen_text(app), pilot=pilot)
        fleet.emit(ActivityChanged("box1", (), not_answering=(TWENTY[0].id,)))
        await wait_for(lambda: re.search(r"\?1 ", line_of(app, "box1")), pilot=pilot, what="?1 on box1's line")
