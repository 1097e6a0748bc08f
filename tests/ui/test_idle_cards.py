"""An idle dashboard stays idle: a machine card is repainted only when the text it shows changes (issue 11.4).

Stepped clock (the app's frozen_time), no waiting on wall time."""

from __future__ import annotations

from collections import deque

from app.config import Config
from app.ui import format as fmt
from app.ui.app import HerdApp, make_app
from tests.ui.screen import screen_text, wait_for
from tests.ui.standin import NOW, demo_fleet

SIZE = (120, 40)


def test_uptime_shows_seconds_in_the_first_minute_then_minutes() -> None:
    assert fmt.uptime(None) == ""
    assert fmt.uptime(0) == "0s"
    assert fmt.uptime(59.9) == "59s"
    assert fmt.uptime(60) == "1m"
    assert fmt.uptime(12 * 60 + 59) == "12m"
    assert fmt.uptime(3600 + 7 * 60 + 5) == "1h07m"
    assert fmt.uptime(5 * 86400 + 2 * 3600) == "5d02h"


async def test_a_card_is_repainted_only_when_its_text_changes() -> None:
    fleet = demo_fleet()
    app: HerdApp = make_app(Config(), fleet, frozen_time=NOW)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.state.get("workstation").stats is not None)
        machines = app.dashboard.machines
        card = machines.card("workstation")
        await wait_for(pilot, lambda: "workstation" in screen_text(app))
        painted: list[bool] = []
        real_refresh = card.refresh

        def counting(*args: object, **kw: bool) -> object:
            painted.append(True)
            return real_refresh(*args, **kw)  # type: ignore[arg-type]

        card.refresh = counting  # type: ignore[method-assign,assignment]
        started = app.state.get("workstation").view.started_at
        assert started is not None
        # Past the first minute the uptime is to the minute: 50 ticks inside one minute repaint nothing.
        minute = (int(NOW - started) // 60 + 1) * 60 + started
        st = app.state.get("workstation")

        async def at(t: float) -> None:
            app.frozen_time = t
            # Figures keep arriving (not stale), as they do every 2 s: their age and the sparkline stay the same.
            st.stats_at, st.cpu = t, deque((t, pct) for _, pct in st.cpu)
            machines.tick()
            await pilot.pause()  # the repaint asked for, if any, is done before the next tick

        await at(minute + 5)
        painted.clear()
        for i in range(1, 50):
            await at(minute + 5 + i)
        assert painted == []
        # The same state again (a stats round whose figures show the same): nothing repainted.
        card.update_state(app.state.get("workstation"))
        assert painted == []
        # The next minute: repainted once.
        await at(minute + 65)
        assert len(painted) == 1
