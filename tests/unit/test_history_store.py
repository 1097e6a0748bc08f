"""The history database: 0600, WAL with two writers at once, keyed rows never twice, bounded and pruned on open."""

from __future__ import annotations

import _sqlite3
import asyncio
import ctypes
import json
import os
import sqlite3
import stat
import threading
import time
from pathlib import Path

import pytest

from app.cli.history_main import is_history
from app.cli.history_main import main as history_main
from app.services.history import store as history_store
from app.services.history.store import PAGE_CACHE_KIB, HistoryRow, HistoryStore


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


def _table(rows: list[HistoryRow]) -> str:
    """What `llamaherd history` printed when it laid the table out in Python: the reference for the SQL layout."""
    out = [("TIME", "MACHINE", "MODEL", "CHANGE", "REASON", "DETAIL")]
    for r in rows:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.time))
        out.append((when, r.machine, r.model or "(router)", f"{r.from_state} -> {r.to_state}", r.reason, r.detail))
    widths = [max(len(row[i]) for row in out) for i in range(5)]
    lines = ("  ".join([*(c.ljust(w) for c, w in zip(row[:-1], widths, strict=True)), row[-1]]) for row in out)
    return "".join(line.rstrip() + "\n" for line in lines)


def _json(r: HistoryRow) -> dict[str, object]:
    when = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(r.time)) + f".{int(r.time * 1000) % 1000:03d}Z"
    return {"time": when, "machine": r.machine, "router": r.router, "model": r.model, "from": r.from_state,
            "to": r.to_state, "reason": r.reason, "detail": r.detail}  # fmt: skip


async def test_json_lines_and_table_are_the_rows_in_time_order_laid_out_by_sqlite(tmp_path: Path) -> None:
    # Stored out of time order, with names of several widths, a router's own row, non-ASCII, quotes and a control
    # character (made visible when stored).
    rows = [
        HistoryRow(1_700_000_300.25, "gpu-longname", "default", "chat-big", "loaded", "unloaded", "evicted",
                   'LRU, for "tiny" ☃', "k3"),
        HistoryRow(1_700_000_100.5, "box", "default", "", "running", "stopped", "requested", "by key s", "k1"),
        HistoryRow(1_700_000_200.0, "box", "default", "ünï", "loading", "failed", "crashed", "exit 9\x1b[31m", "k2"),
    ]  # fmt: skip
    store = HistoryStore(str(tmp_path / "h.db"), clock=lambda: 1_700_000_400.0)
    await store.add(rows)
    stored = await store.query()
    assert [r.key for r in rows] and [r.time for r in stored] == sorted(r.time for r in rows)
    assert "\x1b" not in stored[1].detail  # made visible when stored, so the SQL layout needs no second pass
    assert (await store.query_table()).decode() == _table(stored)
    lines = (await store.query_json()).decode().splitlines()
    assert [json.loads(line) for line in lines] == [_json(r) for r in stored]
    # Filters and the newest-`limit` bound hold for both.
    assert (await store.query_table(model="chat-big")).decode() == _table(stored[2:])
    assert [json.loads(x)["model"] for x in (await store.query_json(limit=2)).decode().splitlines()] == [
        "ünï",
        "chat-big",
    ]
    assert await store.query_table(reason="preset reload") == b""
    assert await store.query_json(since=1_700_000_301.0) == b""
    store.close()


async def test_a_database_from_before_stored_lines_is_read_the_same(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    old = sqlite3.connect(path)
    old.executescript(
        "CREATE TABLE transitions (time REAL NOT NULL, key TEXT NOT NULL, machine TEXT NOT NULL, router TEXT NOT"
        " NULL, model TEXT NOT NULL, from_state TEXT NOT NULL, to_state TEXT NOT NULL, reason TEXT NOT NULL, detail"
        " TEXT NOT NULL, PRIMARY KEY (time, key)) WITHOUT ROWID;"
        "INSERT INTO transitions VALUES (50.5, 'k0', 'box', 'default', 'alpha', 'loaded', 'unloaded', 'evicted', '');"
    )
    old.close()
    store = HistoryStore(str(path), clock=lambda: 100.0)
    await store.add([row(60.0, key="k1")])
    stored = await store.query()
    assert [json.loads(x) for x in (await store.query_json()).decode().splitlines()] == [_json(r) for r in stored]
    assert len(stored) == 2
    store.close()


async def test_history_json_through_the_command_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsysbinary: pytest.CaptureFixture[bytes]) -> None:  # fmt: skip
    """`llamaherd history` is answered by the short entry (no machine or ssh module imported) with the stored rows."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    now = time.time()
    store = HistoryStore()
    box = "local/url:http://127.0.0.1:9"  # the scope of the config's machine below
    rows = [row(now - 60, key="a"), row(now - 30, "beta", key="b"), row(now - 7200, key="old"), row(now - 20, "gamma")]
    await store.add([r._replace(scope=box) for r in rows[:3]] + rows[3:])  # gamma: unscoped, from before scopes
    store.close()
    cfg = tmp_path / "c.toml"
    cfg.write_text('[[machines]]\nname = "box"\nurl = "http://127.0.0.1:9"\n')
    args = ["--config", str(cfg), "history", "--since", "1h", "--json"]
    assert is_history(args) and is_history(["history"]) and is_history([f"--config={cfg}", "history"])
    assert not is_history(["--config", "history"]) and not is_history(["top"]) and not is_history([])
    assert await asyncio.to_thread(history_main, args) == 0
    got = [json.loads(x) for x in capsysbinary.readouterr().out.splitlines()]
    assert [g["model"] for g in got] == ["alpha", "beta"]


@pytest.mark.parametrize("xdg", [None, "", "relative/state", "/srv/state"])
def test_the_default_path_is_in_the_state_directory_transport_names(
    xdg: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.services.hosts.transport import STATE_DIR_TEMPLATE, expand_template

    if xdg is None:
        monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_STATE_HOME", xdg)
    state = expand_template(STATE_DIR_TEMPLATE, os.path.expanduser("~"), xdg)
    assert history_store.default_path() == os.path.join(state, history_store.DB_NAME)


async def test_sqlite_page_cache_holds_its_bound_on_a_database_many_times_bigger(tmp_path: Path) -> None:
    # sqlite3_memory_used is SQLite's own count of what it holds on the heap (found through _sqlite3's library).
    lib = ctypes.CDLL(_sqlite3.__file__)
    lib.sqlite3_memory_used.restype = ctypes.c_int64
    path = tmp_path / "h.db"
    store = HistoryStore(str(path), clock=lambda: 1e6)
    before = lib.sqlite3_memory_used()
    for b in range(25):
        t0 = 1e6 - 30_000 + b * 1000
        await store.add([row(t0 + i, f"model-{i % 50}", key=f"k{b}:{i}", detail="x" * 60) for i in range(1000)])
    assert len(await store.query()) == 25_000
    size = path.stat().st_size + Path(f"{path}-wal").stat().st_size
    held = lib.sqlite3_memory_used() - before
    store.close()
    assert size > 8 * PAGE_CACHE_KIB * 1024  # the whole database could not fit in the bound
    # The cache's bound, and room for the schema and the prepared statements (SQLite's default held ~2.1 MB here).
    assert held <= (PAGE_CACHE_KIB + 256) * 1024, (held, size)
