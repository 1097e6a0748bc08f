"""Why a machine is unreachable, readable in full: wrapped on the selected card at 80 and 140 columns, in the log
panel's note, and said once as a notification when the machine goes (not on every retry; again after it came back
and went again)."""

from __future__ import annotations

import dataclasses

import pytest

from app.config import Config
from app.services.core.fleet_events import MachineChanged
from app.services.core.host_types import Connection
from app.ui.app import HerdApp, make_app
from tests.helpers.screen import record_notifications, screen_text
from tests.helpers.standin_fleet import NOW, StandInFleet, demo_fleet
from tests.helpers.wait import wait_for

# Long enough to be cut anywhere a line is narrower, with a word longer than the 36-column pane (the URL) and an
# escape sequence that must show as text, never clear the screen.
REASON = (
    "GET http://127.0.0.1:8089/models/sse?stream=1&long=parameters-that-go-on failed: "
    "ssh: connect to host nosuchhost.invalid port 22: [Errno -2] Name or service not known \x1b[2J (after 3 tries)"
)
SHOWN = REASON.replace("\x1b", "\u241b")


def fleet_with(reason: str) -> StandInFleet:
    fleet = demo_fleet()
    fleet.views["laptop"] = dataclasses.replace(fleet.views["laptop"], connection_reason=reason)
    return fleet


def squeezed(text: str) -> str:
    """Without whitespace or the pane's borders: what a reason wrapped over several rows reads as, joined."""
    return "".join(text.replace("│", "").replace("┃", "").split())


def unreachable_notes(seen: list[tuple[str, str, str]]) -> list[str]:
    return [msg for _, title, msg in seen if title == "machine unreachable"]


@pytest.mark.parametrize("size", [(80, 24), (140, 40)], ids=["80x24", "140x40"])
async def test_the_selected_machine_shows_the_whole_reason(size: tuple[int, int]) -> None:
    app = make_app(Config(), fleet_with(REASON), frozen_time=NOW)
    async with app.run_test(size=size) as pilot:
        await wait_for(lambda: app.dashboard.model_table.rows_now, pilot=pilot)
        card = app.dashboard.machines.card("laptop")
        assert squeezed(SHOWN) not in squeezed(card.render().plain)  # not selected: a line or two, cut
        await pilot.press("3")
        await wait_for(lambda: squeezed(SHOWN) in squeezed(card.render().plain), pilot=pilot)
        await wait_for(lambda: squeezed(SHOWN) in squeezed(screen_text(app)), pilot=pilot)
        assert "\x1b" not in screen_text(app)
        assert app.dashboard.logs.note.startswith("no log lines: laptop is unreachable: GET http")


async def test_an_outage_is_said_once_and_again_after_the_machine_came_back() -> None:
    fleet = fleet_with("connection refused")
    app: HerdApp = make_app(Config(), fleet, frozen_time=NOW)
    seen = record_notifications(app)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(lambda: unreachable_notes(seen), pilot=pilot)
        assert unreachable_notes(seen) == ["laptop is unreachable: connection refused"]
        down = fleet.views["laptop"]
        # Retries: another reason, a pass through "connecting", still the same outage.
        fleet.emit(MachineChanged("laptop", dataclasses.replace(down, connection_reason="timed out \x1b]0;x\x07")))
        fleet.emit(MachineChanged("laptop", dataclasses.replace(down, connection=Connection.CONNECTING)))
        fleet.emit(MachineChanged("laptop", dataclasses.replace(down, connection_reason="no route to host")))
        await wait_for(lambda: "no route" in app.state.get("laptop").view.connection_reason, pilot=pilot)
        await wait_for(lambda: "no route" in app.dashboard.machines.card("laptop").render().plain, pilot=pilot)
        assert len(unreachable_notes(seen)) == 1
        # Back, then gone again: news again, said once, its text plain and visible.
        fleet.emit(MachineChanged("laptop", dataclasses.replace(down, connection=Connection.CONNECTED)))
        await wait_for(lambda: app.state.get("laptop").view.connection is Connection.CONNECTED, pilot=pilot)
        # the notices look at each paint: a return folded into the same paint as the next outage is never seen
        await wait_for(lambda: "laptop" not in app.dashboard._unreachable._said, pilot=pilot)
        fleet.emit(MachineChanged("laptop", dataclasses.replace(down, connection_reason="reset [b]x[/b] \x1b[2J")))
        await wait_for(lambda: len(unreachable_notes(seen)) == 2, pilot=pilot)
        assert unreachable_notes(seen)[1] == "laptop is unreachable: reset [b]x[/b] \u241b[2J"
