"""`l`, `u` and `r` say that they began and when they are done; a failure is one line that says where the rest is;
the dashboard tells a scenario playing beside it (the demo's) what the operator acts on and when a screen is open."""

from __future__ import annotations

import re

from app.config import Config
from app.services.core.fleet_events import ModelsChanged, Problem
from app.services.core.operator_presence import OperatorHands
from app.services.core.router_types import ModelState
from app.ui.app import make_app
from app.ui.dashboard.action_feedback import FAILURE_LINE_MAX, FORGET_AFTER, ActionNotices, one_line_failure
from app.ui.screens.help import HelpScreen
from tests.helpers.screen import record_notifications
from tests.helpers.standin_fleet import NOW, demo_fleet, model, workstation_models
from tests.helpers.wait import wait_for
from tests.ui.test_dashboard import SIZE, replace_model


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def messages(seen: list[tuple[str, str, str]]) -> list[str]:
    return [m for _, _, m in seen]


async def test_load_unload_and_reload_say_they_began_and_when_done() -> None:
    fleet = demo_fleet()
    app = make_app(Config(), fleet, frozen_time=NOW)
    seen = record_notifications(app)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 5, pilot=pilot)
        t = app.dashboard.model_table
        t.move_cursor(row=t.get_row_index("mistral-7b"))
        await pilot.press("l")
        await wait_for(lambda: "loading mistral-7b on workstation…" in messages(seen), pilot=pilot)
        models = replace_model(workstation_models(), "mistral-7b", state=ModelState.LOADING)
        fleet.emit(ModelsChanged("workstation", models))
        await wait_for(lambda: "loading" in t.rows_now["mistral-7b"][1].text, pilot=pilot)
        assert not any("loaded" in m for m in messages(seen))  # still loading: not done yet
        models = replace_model(models, "mistral-7b", state=ModelState.LOADED)
        fleet.emit(ModelsChanged("workstation", models))
        await wait_for(lambda: any("loaded on" in m for m in messages(seen)), pilot=pilot)
        done = [m for m in messages(seen) if "loaded on" in m]
        assert len(done) == 1 and re.fullmatch(r"mistral-7b loaded on workstation \(\d+\.\d s\)", done[0])

        t.move_cursor(row=t.get_row_index("qwen2.5-coder-14b"))
        await pilot.press("u")
        await wait_for(lambda: "unloading qwen2.5-coder-14b on workstation…" in messages(seen), pilot=pilot)
        fleet.emit(ModelsChanged("workstation", replace_model(models, "qwen2.5-coder-14b", state=ModelState.UNLOADED)))
        await wait_for(
            lambda: any(m.startswith("qwen2.5-coder-14b unloaded on workstation (") for m in messages(seen)),
            pilot=pilot,
        )

        await pilot.press("r")
        await wait_for(lambda: "presets reloaded on workstation" in messages(seen), pilot=pilot)
        assert all(sev == "information" for sev, title, _ in seen if title != "machine unreachable")  # the laptop


async def test_a_refused_load_is_not_announced_as_done() -> None:
    fleet = demo_fleet()
    fleet.refuse["load"] = "POST /models/load: router answered 500: model limit reached"
    app = make_app(Config(), fleet, frozen_time=NOW)
    seen = record_notifications(app)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 5, pilot=pilot)
        t = app.dashboard.model_table
        t.move_cursor(row=t.get_row_index("mistral-7b"))
        await pilot.press("l")
        await wait_for(lambda: any(sev == "error" for sev, _, _ in seen), pilot=pilot)
        # whoever loads it later (another client), the dashboard did not: no "loaded" for our refused request
        fleet.emit(
            ModelsChanged("workstation", replace_model(workstation_models(), "mistral-7b", state=ModelState.LOADED))
        )
        await wait_for(lambda: "loaded" in t.rows_now["mistral-7b"][1].text, pilot=pilot)
        await pilot.pause()
        assert not any("loaded on" in m for m in messages(seen))


async def test_a_model_failure_is_one_line_with_the_key_to_its_log() -> None:
    fleet = demo_fleet()
    app = make_app(Config(), fleet, frozen_time=NOW)
    seen = record_notifications(app)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 5, pilot=pilot)
        tail = "\n".join(f"llama_model_load: error loading model line {i}" for i in range(15))
        fleet.emit(
            Problem("workstation", f"broken failed to load on workstation (exit code 1)\n{tail}", model="broken")
        )
        await wait_for(
            lambda: any(sev == "error" for sev, _, _ in seen), pilot=pilot
        )  # (the laptop's outage: a warning)
        sev, title, message = next(s for s in seen if s[0] == "error")
        assert (sev, title) == ("error", "workstation: broken")
        assert message == "broken failed to load on workstation (exit code 1) · g for the log"


def test_a_failure_line_is_bounded_and_names_the_log_only_where_there_is_one() -> None:
    assert one_line_failure("\n\n  refused: no\nmore\n", None) == "refused: no"
    long = one_line_failure("x" * 1000, "g")
    assert long == "x" * (FAILURE_LINE_MAX - 1) + "… · g for the log"
    assert one_line_failure("", "g") == "failed · g for the log"


def test_notices_time_from_the_request_and_forget_failures_and_the_unfinished() -> None:
    clock = Clock()
    n = ActionNotices(clock)
    assert n.began("load", "m", "a") == "loading a on m…"
    n.began("load", "m", "b")
    n.began("unload", "m", "c")
    n.began("load", "other", "d")
    clock.t += 2.14
    listed = (model("a", ModelState.LOADED), model("b", ModelState.LOADING), model("c", ModelState.LOADED))
    assert n.settled("m", listed) == ["a loaded on m (2.1 s)"]
    assert n.settled("m", listed) == []  # said once
    assert n.settled("m", (model("b", ModelState.FAILED), model("c", ModelState.LOADED))) == []  # said elsewhere
    assert n.settled("m", (model("b", ModelState.LOADED),)) == []  # that request is over; c left the list
    clock.t += FORGET_AFTER
    assert n.settled("other", (model("d", ModelState.LOADED),)) == []  # half an hour later: no longer news


def test_a_retry_of_a_failed_model_is_announced_once_it_loads() -> None:
    # The list still shows the old failure until the retry is seen loading: that failure is not this request's.
    clock = Clock()
    n = ActionNotices(clock)
    n.began("load", "m", "flaky")
    assert n.settled("m", (model("flaky", ModelState.FAILED),)) == []
    assert n.settled("m", (model("flaky", ModelState.LOADING),)) == []
    clock.t += 1
    assert n.settled("m", (model("flaky", ModelState.LOADED),)) == ["flaky loaded on m (1.0 s)"]


async def test_the_dashboard_tells_a_scenario_what_the_operator_touches_and_when_a_screen_is_open() -> None:
    clock = Clock()
    hands = OperatorHands(clock, hands_off=300)
    app = make_app(Config(), demo_fleet(), frozen_time=NOW, hands=hands)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 5, pilot=pilot)
        assert not hands.hands_off("workstation") and not hands.screen_open
        t = app.dashboard.model_table
        t.move_cursor(row=t.get_row_index("mistral-7b"))
        await pilot.press("l")
        await wait_for(lambda: hands.hands_off("workstation"), pilot=pilot)
        assert not hands.hands_off("gpu-box")
        clock.t += 301
        assert not hands.hands_off("workstation")
        await pilot.press("question_mark")
        await wait_for(lambda: isinstance(app.screen, HelpScreen), pilot=pilot)
        assert hands.screen_open
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, HelpScreen), pilot=pilot)
        assert not hands.screen_open
