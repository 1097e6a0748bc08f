"""A model failing again and again by another's hand is toasted once per QUIET_SECONDS; the operator's own load of
it is answered at once; the memory of toasted models is bounded."""

from __future__ import annotations

import pytest

from app.config import Config
from app.services.core.fleet_events import Problem
from app.ui.app import make_app
from app.ui.dashboard import screen as dashboard_screen
from app.ui.dashboard.repeat_failures import MAX_KEPT, QUIET_SECONDS, RepeatedFailures
from tests.helpers.clock import SteppedClock
from tests.helpers.screen import record_notifications
from tests.helpers.standin_fleet import NOW, demo_fleet
from tests.helpers.wait import wait_for


def test_quiet_for_a_while_per_model_and_bounded() -> None:
    clock = SteppedClock()
    r = RepeatedFailures(clock)
    assert not r.quiet("box", "broken")
    clock.t += QUIET_SECONDS - 1
    assert r.quiet("box", "broken")
    assert not r.quiet("box", "other")  # another model is its own
    assert not r.quiet("other-box", "broken")
    clock.t += 2
    assert not r.quiet("box", "broken")  # the quiet time is over: toasted again
    r.forget("box", "broken")
    assert not r.quiet("box", "broken")
    for i in range(MAX_KEPT * 3):
        clock.t += QUIET_SECONDS / MAX_KEPT  # each one's quiet time ends as new ones come
        r.quiet("box", f"m{i}")
    assert len(r) <= MAX_KEPT + 1


def failure() -> Problem:
    return Problem("workstation", "broken failed to load on workstation (exit code 1)", model="broken")


async def test_a_repeated_failure_is_toasted_once_until_the_operator_loads_it_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The same message within a few seconds is one toast anyway (raised and announced): not what is tested here.
    monkeypatch.setattr(dashboard_screen, "ERROR_DEDUP_SECONDS", 0.0)
    fleet = demo_fleet()
    app = make_app(Config(), fleet, frozen_time=NOW)
    seen = record_notifications(app)
    async with app.run_test(size=(160, 40), notifications=True) as pilot:
        await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 5, pilot=pilot)

        def errors() -> list[str]:
            return [m for sev, _, m in seen if sev == "error"]

        fleet.emit(failure())
        await wait_for(lambda: len(errors()) == 1, pilot=pilot)
        for _ in range(3):  # a client retrying it: the row says each failure, the toasts do not pile up
            fleet.emit(failure())
            await pilot.pause(0.05)
        fleet.emit(Problem("workstation", "gemma failed to load (exit code 1)", model="gemma-3-4b-it"))
        await wait_for(lambda: len(errors()) == 2, pilot=pilot)  # another model's failure is said
        assert sum("broken" in m for m in errors()) == 1
        app.dashboard.load("workstation", "broken")  # the operator's own load: its failure is answered
        fleet.emit(failure())
        await wait_for(lambda: sum("broken" in m for m in errors()) == 2, pilot=pilot)
