"""Finding in the log, as in `less`: `/` keeps every line and goes to the newest match (the log pauses there), `n`
goes to the next (newer) and `N` to the previous (older), round the ends, with "match i of k" said; `&` filters;
Esc clears either. Over 100,000 lines too."""

from __future__ import annotations

from app.config import Config
from app.services.core.log_lines import LogLine
from app.ui.app import make_app
from tests.helpers.standin_fleet import NOW, demo_fleet
from tests.helpers.wait import wait_for

SIZE = (120, 40)


async def test_find_marks_goes_to_the_newest_and_n_N_walk_the_matches() -> None:
    app = make_app(Config(), demo_fleet(), frozen_time=NOW)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 5, pilot=pilot)
        logs = app.dashboard.logs
        everything = len(logs.buffer)
        logs.focus()
        await pilot.press("slash", *"load_model", "enter")
        await wait_for(lambda: logs.find == "load_model" and app.focused is logs, pilot=pilot)
        rows = [i for i, ln in enumerate(logs.view) if "load_model" in ln.text]
        assert len(rows) == 3 and len(logs.view) == everything  # nothing hidden
        assert logs.found == (3, 3) and not logs.following  # the newest, paused there
        assert "/load_model: match 3 of 3 (n/N)" in str(logs.border_subtitle)
        await pilot.press("N")
        assert logs.found == (2, 3)
        await pilot.press("N", "N")
        assert logs.found == (3, 3)  # round the oldest end
        await pilot.press("n")
        assert logs.found == (1, 3)  # round the newest end
        await pilot.press("escape")
        assert logs.find == "" and logs.found is None and "match" not in str(logs.border_subtitle)
        await pilot.press("slash", *"no such words", "enter")
        await wait_for(lambda: logs.find == "no such words", pilot=pilot)
        assert logs.found == (0, 0) and "no match" in str(logs.border_subtitle)


async def test_a_find_in_a_hundred_thousand_lines_counts_them_all() -> None:
    app = make_app(Config(), demo_fleet(), frozen_time=NOW)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 5, pilot=pilot)
        logs = app.dashboard.logs
        lines = [LogLine(raw=f"line {i:06d} {'needle' if i % 1000 == 7 else 'hay'}", text="") for i in range(100_000)]
        logs.append(lines)
        await pilot.pause()
        logs.focus()
        await pilot.press("slash", *"needle", "enter")
        await wait_for(lambda: logs.find == "needle", pilot=pilot)
        assert logs.found is not None and logs.found[1] == min(100, len(logs.buffer) // 1000)
        assert "needle" in logs.view[logs._found_row or 0].raw


async def test_y_copies_the_match_or_the_screen_and_Y_everything_shown_as_visible_text() -> None:
    app = make_app(Config(), demo_fleet(), frozen_time=NOW)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 5, pilot=pilot)
        logs = app.dashboard.logs
        logs.append([LogLine(raw="evil \x1b]52;c;cm0gLXJmIH4=\x07 line", text="")])
        await pilot.pause()
        logs.focus()
        await pilot.press("Y")
        everything = app.clipboard.splitlines()
        assert len(everything) == len(logs.view) == 9
        assert everything[-1] == "evil ␛]52;c;cm0gLXJmIH4=␇ line"  # its escape sequence shown, never passed on
        await pilot.press("slash", *"exited", "enter")
        await wait_for(lambda: logs.found == (1, 1), pilot=pilot)
        await pilot.press("y")
        assert app.clipboard == "instance name=broken exited with status 1"
