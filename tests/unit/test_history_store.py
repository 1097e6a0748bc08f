"""The history database: 0600, WAL with two writers at once, keyed rows never twice, bounded and pruned on open."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import stat
import threading
from pathlib import Path

import pytest

from app.services import history_store
from app.services.history_store import HistoryRow, HistoryStore


def row(t: float, model: str = "alpha", to: str = "unloaded", key: str = "", detail: str = "") -> HistoryRow:
    return HistoryRow(t, "box", "default", model, "loaded", to, "evicted", detail, key)


async def test_file_is_0600_in_wal_mode_and_keyed_rows_are_stored_once(tmp_path: Path) -> None:
    path = tmp_path / "state" / "history.sqlite3"
    store = HistoryStore(str(path))
    assert await store.add([row(100.0, key="log:a:1"), row(101.0, key="log:a:2")]) == 2
    assert await store.add([row(100.0, key="log:a:1"), row(101.0, key="log:a:2")]) == 0
    # Seen again with more said (the model an eviction made room for): the row says more, and is still one row.
    assert await store.add([row(100.0, key="log:a:1", detail="models_max, for beta")]) == 0
    rows = await store.query()
    assert [r.detail for r in rows] == ["models_max, for beta", ""]
    store.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    for extra in ("-wal", "-shm"):
        p = Path(str(path) + extra)
        if p.exists():
            assert stat.S_IMODE(p.stat().st_mode) == 0o600, extra
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_a_live_transition_seen_by_two_dashboards_is_one_row(tmp_path: Path) -> None:
    a = HistoryStore(str(tmp_path / "h.db"), clock=lambda: 600.0)
    b = HistoryStore(str(tmp_path / "h.db"), clock=lambda: 600.0)
    assert await a.add([row(500.0)]) == 1
    assert await b.add([row(500.4)]) == 0  # the same change, 0.4 s apart: the other dashboard's sight of it
    assert await b.add([row(510.0)]) == 1  # a later change of the same kind is its own
    assert await a.count() == 2
    a.close()
    b.close()


def test_two_writers_at_once_do_not_fail(tmp_path: Path) -> None:
    path = str(tmp_path / "h.db")
    HistoryStore(path).add_sync([row(1.0, key="first")])  # made once, so both open an existing database
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def write(who: str) -> None:
        store = HistoryStore(path, clock=lambda: 2000.0)
        try:
            start.wait()
            for i in range(300):
                store.add_sync([row(1000.0 + i, model=who, key=f"log:{who}:{i}")])
                if i % 50 == 0:
                    asyncio.run(store.query(machine="box"))
        except BaseException as e:
            errors.append(e)
        finally:
            store.close()

    threads = [threading.Thread(target=write, args=(w,)) for w in ("alpha", "beta")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    db = sqlite3.connect(path)
    counts = dict(db.execute("SELECT model, count(*) FROM transitions WHERE key != 'first' GROUP BY model"))
    assert counts == {"alpha": 300, "beta": 300}


async def test_bounds_are_kept_by_pruning_when_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(history_store, "MAX_ROWS", 100)
    monkeypatch.setattr(history_store, "MAX_AGE", 3600.0)
    now = 1_000_000.0
    path = str(tmp_path / "h.db")
    store = HistoryStore(path, clock=lambda: now)
    old = [row(now - 7200 + i, key=f"old:{i}") for i in range(20)]
    recent = [row(now - 1000 + i, key=f"new:{i}") for i in range(150)]
    assert await store.add([*old, *recent]) == 170
    store.close()
    reopened = HistoryStore(path, clock=lambda: now)
    rows = await reopened.query()
    assert len(rows) == 100
    assert all(r.time >= now - 3600 for r in rows)  # past the age bound: gone
    assert [r.time for r in rows] == [now - 1000 + i for i in range(50, 150)]  # past the count: the newest kept
    reopened.close()


async def test_query_filters_and_since(tmp_path: Path) -> None:
    store = HistoryStore(str(tmp_path / "h.db"), clock=lambda: 100.0)
    await store.add([row(10.0, "alpha", key="k1"), row(20.0, "beta", key="k2"), row(30.0, "alpha", key="k3")])
    assert [r.time for r in await store.query(model="alpha")] == [10.0, 30.0]
    assert [r.time for r in await store.query(since=15.0)] == [20.0, 30.0]
    assert [r.time for r in await store.query(reason="crashed")] == []
    assert [r.time for r in await store.query(limit=2)] == [20.0, 30.0]  # the newest, oldest first
    store.close()
    assert os.path.exists(tmp_path / "h.db")
