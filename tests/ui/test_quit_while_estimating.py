"""`l` then `q` at once (issue 38, case 7): the fit check's worker, cancelled before it ran, left a coroutine that
was never awaited, and Python said so on stderr as the dashboard quit."""

from __future__ import annotations

import gc
import warnings

from tests.helpers.standin_fleet import demo_fleet
from tests.ui.test_dashboard import SIZE, app_for
from tests.ui.test_fit_ui import est, ready, select


async def test_load_then_quit_before_the_estimate_leaves_no_unawaited_coroutine() -> None:
    fleet = demo_fleet()
    fleet.estimates = {("workstation", "llama-3.2-3b"): est(2.0)}  # not the selected model's: it is estimated
    app = app_for(fleet)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with app.run_test(size=SIZE) as pilot:
            await ready(app, pilot)
            await select(app, pilot, "1", "mistral-7b")
            # both keys in one read of the terminal: the worker is cancelled before its task ever ran
            app.dashboard.action_load()
            app.dashboard.action_load()  # pressed twice: the second replaces the first (exclusive)
            app.exit()
        del app, pilot
        gc.collect()
    unawaited = [str(w.message) for w in caught if "never awaited" in str(w.message)]
    assert unawaited == []
