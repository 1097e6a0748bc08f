"""The transition history: an embedded SQLite database in llamaherd's local state directory.

stdlib sqlite3, every call run in a thread (asyncio.to_thread) so the event loop never waits on the disk. WAL, so a
dashboard, a second dashboard and a headless `llamaherd history` can write and read at once (a writer waits up to
BUSY_TIMEOUT for another's lock instead of failing). Bounded by age and by count, pruned when opened. Every row
has a key: a transition read from a router log is keyed by its router run and log time, so reading the same log
again (backfill, a second dashboard) adds nothing twice.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from app.services.textsafe import visible
from app.services.transport import STATE_DIR_TEMPLATE, expand_template

T = TypeVar("T")

DB_NAME = "history.sqlite3"
MAX_AGE = 30 * 86400.0  # seconds a row is kept
MAX_ROWS = 200_000  # rows kept at most (the newest)
REQUESTS_KEPT = 86400.0  # seconds a "this llamaherd asked" note is kept
BUSY_TIMEOUT = 10.0
# A transition seen live (not from a log) by two dashboards at once is one transition: the second is dropped when
# the same change of the same model is already recorded within this many seconds.
SAME_EVENT_WITHIN = 3.0
QUERY_LIMIT = 100_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS transitions (
    time REAL NOT NULL,
    key TEXT NOT NULL,
    machine TEXT NOT NULL,
    router TEXT NOT NULL,
    model TEXT NOT NULL,
    from_state TEXT NOT NULL,
    to_state TEXT NOT NULL,
    reason TEXT NOT NULL,
    detail TEXT NOT NULL,
    PRIMARY KEY (time, key)
) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS transitions_key ON transitions (key);
CREATE TABLE IF NOT EXISTS requests (
    time REAL NOT NULL,
    machine TEXT NOT NULL,
    model TEXT NOT NULL,
    action TEXT NOT NULL,
    by TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS requests_at ON requests (machine, model, time);
"""


@dataclass(frozen=True, slots=True)
class HistoryRow:
    time: float
    machine: str
    router: str
    model: str  # "" for a transition of the router or the machine itself
    from_state: str
    to_state: str
    reason: str
    detail: str
    key: str = ""  # "" for a live event: made from its fields

    def as_json(self) -> dict[str, object]:
        return {
            "time": self.time, "machine": self.machine, "router": self.router, "model": self.model,
            "from": self.from_state, "to": self.to_state, "reason": self.reason, "detail": self.detail,
        }  # fmt: skip


def default_path() -> str:
    """In llamaherd's state directory on this machine (beside the records of routers it runs here)."""
    state = expand_template(STATE_DIR_TEMPLATE, os.path.expanduser("~"), os.environ.get("XDG_STATE_HOME"))
    return os.path.join(state, DB_NAME)


class HistoryStore:
    def __init__(self, path: str | None = None, clock: Callable[[], float] = time.time) -> None:
        self.path = path or default_path()
        self._clock = clock
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    # ---- opening ----

    def _now(self) -> float:
        return self._clock()

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            d = os.path.dirname(self.path)
            os.makedirs(d, mode=0o700, exist_ok=True)
            # Made 0600 before SQLite opens it; SQLite gives its -wal and -shm files the same mode.
            os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
            os.chmod(self.path, 0o600)
            db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT, check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
            self._db = db
            self._prune(db)
        return self._db

    def _prune(self, db: sqlite3.Connection) -> None:
        now = self._now()
        with db:
            db.execute("DELETE FROM transitions WHERE time < ?", (now - MAX_AGE,))
            db.execute(
                "DELETE FROM transitions WHERE time <="
                " (SELECT time FROM transitions ORDER BY time DESC LIMIT 1 OFFSET ?)",
                (MAX_ROWS,),
            )
            db.execute("DELETE FROM requests WHERE time < ?", (now - REQUESTS_KEPT,))

    def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            return fn(self._conn())

    async def _call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await asyncio.to_thread(self._run, fn)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    async def open(self) -> None:
        """Open (made, pruned) now rather than at the first use."""
        await self._call(lambda db: None)

    # ---- writing ----

    async def add(self, rows: Iterable[HistoryRow]) -> int:
        """Store rows; those already there (same key, or a live one already recorded by another) are skipped. A
        keyed row seen again with a longer detail (the model an eviction made room for) updates it. Returns how
        many were new."""
        batch = list(rows)
        return await self._call(lambda db: self._add(db, batch)) if batch else 0

    def add_sync(self, rows: Sequence[HistoryRow]) -> int:
        return self._run(lambda db: self._add(db, rows))

    def _add(self, db: sqlite3.Connection, rows: Sequence[HistoryRow]) -> int:
        new = 0
        db.execute("BEGIN IMMEDIATE")
        try:
            for r in rows:
                if not r.key and self._recorded(db, r):
                    continue
                r = _shown(r)
                key = r.key or f"live:{r.machine}:{r.router}:{r.model}:{r.to_state}:{r.time:.6f}"
                had = db.execute("SELECT detail FROM transitions WHERE key = ?", (key,)).fetchone()
                if had is None:
                    db.execute(
                        "INSERT INTO transitions (time, machine, router, model, from_state, to_state, reason, detail,"
                        " key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (r.time, r.machine, r.router, r.model, r.from_state, r.to_state, r.reason, r.detail, key),
                    )
                    new += 1
                elif len(r.detail) > len(had[0]):
                    db.execute("UPDATE transitions SET detail = ? WHERE key = ?", (r.detail, key))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return new

    @staticmethod
    def _recorded(db: sqlite3.Connection, r: HistoryRow) -> bool:
        row = db.execute(
            "SELECT 1 FROM transitions WHERE time BETWEEN ? AND ? AND machine = ? AND router = ? AND model = ?"
            " AND from_state = ? AND to_state = ? LIMIT 1",
            (r.time - SAME_EVENT_WITHIN, r.time + SAME_EVENT_WITHIN, r.machine, r.router, r.model,
             r.from_state, r.to_state),
        ).fetchone()  # fmt: skip
        return row is not None

    async def note_request(self, machine: str, model: str, action: str, by: str) -> None:
        """This llamaherd asked (load, unload, start, stop): a later transition it explains says who asked."""
        now = self._now()

        def put(db: sqlite3.Connection) -> None:
            db.execute("INSERT INTO requests VALUES (?, ?, ?, ?, ?)", (now, machine, model, action, by))

        await self._call(put)

    # ---- reading ----

    async def requests(self, machine: str, since: float) -> list[tuple[float, str, str, str]]:
        """(time, model, action, by) of the requests noted for a machine since then, oldest first."""

        def get(db: sqlite3.Connection) -> list[tuple[float, str, str, str]]:
            cur = db.execute(
                "SELECT time, model, action, by FROM requests WHERE machine = ? AND time >= ? ORDER BY time",
                (machine, since),
            )
            return [(float(t), str(m), str(a), str(b)) for t, m, a, b in cur]

        return await self._call(get)

    async def query(self, since: float | None = None, machine: str | None = None, model: str | None = None,
                    reason: str | None = None, limit: int = QUERY_LIMIT) -> list[HistoryRow]:  # fmt: skip
        """Rows oldest first, filtered; the newest `limit` when there are more."""
        cols = "time, machine, router, model, from_state, to_state, reason, detail"

        def get(db: sqlite3.Connection) -> list[HistoryRow]:
            return [HistoryRow(*r) for r in _select(db, cols, since, machine, model, reason, limit)]

        return await self._call(get)

    async def query_json(self, since: float | None = None, machine: str | None = None, model: str | None = None,
                         reason: str | None = None, limit: int = QUERY_LIMIT) -> list[str]:  # fmt: skip
        """The same rows as one JSON object each (time as ISO 8601 UTC), made by SQLite: 100,000 rows made into
        dicts and then JSON in Python cost seconds."""

        def get(db: sqlite3.Connection) -> list[str]:
            return [r[0] for r in _select(db, _JSON_OBJECT, since, machine, model, reason, limit)]

        return await self._call(get)

    async def count(self) -> int:
        return await self._call(lambda db: int(db.execute("SELECT count(*) FROM transitions").fetchone()[0]))


_JSON_OBJECT = (
    "json_object('time', strftime('%Y-%m-%dT%H:%M:%fZ', time, 'unixepoch'), 'machine', machine, 'router', router,"
    " 'model', model, 'from', from_state, 'to', to_state, 'reason', reason, 'detail', detail)"
)


def _select(db: sqlite3.Connection, cols: str, since: float | None, machine: str | None, model: str | None,
            reason: str | None, limit: int) -> sqlite3.Cursor:  # fmt: skip
    """The newest `limit` rows that match, oldest first. The rows are stored in time order, so this is one range
    read in order: the time of the limit-th newest row is found first (sorting 100,000 rows cost more than
    reading them)."""
    where: list[str] = ["1"]
    args: list[object] = []
    for col, val in (("machine", machine), ("model", model), ("reason", reason)):
        if val is not None:
            where.append(f"{col} = ?")
            args.append(val)
    if since is not None:
        where.append("time >= ?")
        args.append(since)
    cond = " AND ".join(where)
    newest = f"SELECT time FROM transitions WHERE {cond} ORDER BY time DESC LIMIT 1 OFFSET ?"
    row = db.execute(newest, (*args, limit - 1)).fetchone()
    if row is not None:
        cond += " AND time >= ?"
        args.append(row[0])
    return db.execute(f"SELECT {cols} FROM transitions WHERE {cond} ORDER BY time", args)


def _shown(r: HistoryRow) -> HistoryRow:
    """Names and detail as text that can be stored and shown: a lone surrogate from a router's JSON cannot be
    written as UTF-8, and a control character is shown, never interpreted, wherever the row is read."""
    fields = (r.machine, r.router, r.model, r.detail)
    if all(visible(f) == f for f in fields):
        return r
    machine, router, model, detail = (visible(f) for f in fields)
    return HistoryRow(r.time, machine, router, model, r.from_state, r.to_state, r.reason, detail, r.key)
