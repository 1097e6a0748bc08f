"""The model row's last recorded change beside its status ("evicted for chat-big · 14:02"): from the history
database when the dashboard opens, and from each row recorded while it runs."""

from __future__ import annotations

import time
from pathlib import Path

from app.config import Config
from app.services.core.router_types import ModelState
from app.services.history.last_change import LastChanges
from app.services.history.store import HistoryRow, HistoryStore
from app.ui.app import make_app
from app.ui.dashboard.reason_cells import reason_note, reason_notes
from tests.helpers.standin_fleet import NOW, demo_fleet, model
from tests.helpers.wait import wait_for


def row(ago: float, name: str, to: str, reason: str, detail: str = "", machine: str = "workstation") -> HistoryRow:
    return HistoryRow(NOW - ago, machine, "default", name, "loaded", to, reason, detail, f"k:{name}:{ago}")


def clock(t: float) -> str:
    return time.strftime("%H:%M", time.localtime(t))


def test_the_note_says_why_while_the_model_is_still_where_that_change_left_it() -> None:
    unloaded = model("chat-small", ModelState.UNLOADED)
    evicted = row(
        120, "chat-small", "unloaded", "evicted", "models_max limit reached, least recently used, for chat-big"
    )
    assert reason_note(unloaded, evicted, NOW) == f"evicted for chat-big · {clock(NOW - 120)}"
    reload = row(60, "chat-small", "unloaded", "preset reload", "source updated or removed")
    assert reason_note(unloaded, reload, NOW) == f"preset reload · {clock(NOW - 60)}"
    # Loaded again since: that change is not why it is loaded now.
    assert reason_note(model("chat-small", ModelState.LOADED), evicted, NOW) == ""
    old = row(3 * 86400, "chat-small", "unloaded", "requested")
    assert reason_note(unloaded, old, NOW).startswith("requested · " + time.strftime("%b", time.localtime(old.time)))
    failed = model("broken", ModelState.UNLOADED, failed=True, exit_code=9)
    assert reason_note(failed, row(5, "broken", "failed", "crashed", "exit status 9"), NOW).startswith("crashed · ")
    assert reason_notes([unloaded], {}, NOW) == {}


def test_last_changes_keep_the_newest_row_of_each_model() -> None:
    last = LastChanges()
    assert last.absorb([row(50, "a", "unloaded", "evicted"), row(100, "a", "loaded", "requested")]) == {"workstation"}
    assert last.of("workstation")["a"].reason == "evicted"  # the newer of the two, whatever the order they came in
    assert last.absorb([row(10, "", "stopped", "requested")]) == set()  # the router's own change: no model row
    assert last.of("laptop") == {}


async def test_the_status_cell_shows_the_last_change_from_the_database_and_then_live(tmp_path: Path) -> None:
    store = HistoryStore(str(tmp_path / "h.db"), clock=lambda: NOW)
    await store.add([row(300, "mistral-7b", "unloaded", "evicted", "models_max limit reached, for qwen2.5-coder-14b")])
    app = make_app(Config(), demo_fleet(), frozen_time=NOW, history=store)
    async with app.run_test(size=(200, 40)) as pilot:
        table = app.dashboard.model_table

        def status(mid: str) -> str:
            return table.rows_now[mid][1].text if mid in table.rows_now else ""

        want = f"evicted for qwen2.5-coder-14b · {clock(NOW - 300)}"
        await wait_for(lambda: status("mistral-7b").endswith(want), pilot=pilot)
        assert status("broken").endswith("failed (exit 1)")  # nothing recorded: the status alone
        await store.add([row(20, "broken", "failed", "crashed", "exit status 1")])  # recorded while it runs
        await wait_for(lambda: status("broken").endswith(f"failed (exit 1) · crashed · {clock(NOW - 20)}"), pilot=pilot)
    store.close()
