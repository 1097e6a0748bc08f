"""An idle dashboard stays idle: a machine card is repainted only when the text it shows changes (issue 11.4).

Stepped clock (the app's frozen_time), no waiting on wall time."""

from __future__ import annotations

from collections import deque
from dataclasses import replace

from textual.geometry import Region

from app.config import Config
from app.ui.app import HerdApp, make_app
from app.ui.text import format as fmt
from tests.helpers.screen import screen_text
from tests.helpers.standin_fleet import NOW, demo_fleet
from tests.helpers.wait import wait_for

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
        await wait_for(lambda: app.state.get("workstation").stats is not None, pilot=pilot)
        machines = app.dashboard.machines
        card = machines.card("workstation")
        await wait_for(lambda: "workstation" in screen_text(app), pilot=pilot)
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


async def test_a_stats_round_repaints_only_the_lines_whose_text_changed() -> None:
    fleet = demo_fleet()
    app: HerdApp = make_app(Config(), fleet, frozen_time=NOW)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: app.state.get("gpu-box").stats is not None, pilot=pilot)
        card = app.dashboard.machines.card("gpu-box")
        await wait_for(lambda: "gpu-box" in screen_text(app), pilot=pilot)
        st = app.state.get("gpu-box")
        assert st.stats is not None
        before = card.render().plain.splitlines()
        asked: list[tuple[tuple[object, ...], dict[str, bool]]] = []
        real_refresh = card.refresh

        def counting(*regions: object, **kw: bool) -> object:
            asked.append((regions, kw))
            return real_refresh(*regions, **kw)  # type: ignore[arg-type]

        card.refresh = counting  # type: ignore[method-assign,assignment]
        # A new CPU figure (and so a new sparkline point): the card's CPU line changes, nothing else.
        st.stats = replace(st.stats, cpu_pct=99.0)
        st.cpu.append((NOW, 99.0))
        card.update_state(st)
        after = card.render().plain.splitlines()
        changed = [y for y, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
        assert len(changed) == 1 and "99%" in after[changed[0]]
        assert len(asked) == 1
        regions, kw = asked[0]
        assert not kw.get("layout") and len(regions) == 1
        region = regions[0]
        assert isinstance(region, Region) and (region.y, region.height) == (changed[0], 1)
        await pilot.pause()
        assert "99%" in screen_text(app)  # and the line that was repainted shows it
