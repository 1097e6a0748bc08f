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
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple, TypeVar

from app.services.core.textsafe import visible

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
MMAP_SIZE = 256 * 1024 * 1024  # address space, not memory: pages are shared with the OS cache
# SQLite's own page cache, in KiB (its default is 2,000): the heap a dashboard left open for days keeps for it, and
# it grew with the database (~5 pages a minute under a load/unload cycle every 3 s) until it reached its bound.
# Reads of the database file go through the memory map above; this holds the pages read from the WAL and those
# being written, a few per transaction.
PAGE_CACHE_KIB = 512

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
    line TEXT NOT NULL DEFAULT '',
    scope TEXT NOT NULL DEFAULT '',
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


class HistoryRow(NamedTuple):
    """A tuple, not a dataclass: a query makes up to 100,000 of them, and a frozen dataclass's __init__ cost
    ~2 µs a row (220 ms for 100,000) where a tuple's costs a tenth of that."""

    time: float
    machine: str
    router: str
    model: str  # "" for a transition of the router or the machine itself
    from_state: str
    to_state: str
    reason: str
    detail: str
    key: str = ""  # "" for a live event: made from its fields
    scope: str = ""
    """The router's identity (history/scope.py), "" for a row recorded before rows had one. A row's machine name is
    the one its recorder's config gave; a store reading for another config shows that config's name."""

    def as_json(self) -> dict[str, object]:
        return {
            "time": self.time, "machine": self.machine, "router": self.router, "model": self.model,
            "from": self.from_state, "to": self.to_state, "reason": self.reason, "detail": self.detail,
        }  # fmt: skip


def default_path() -> str:
    """In llamaherd's state directory on this machine (beside the records of routers it runs here): transport's
    STATE_DIR_TEMPLATE expanded here, because importing transport (and the types it carries) was a quarter of
    `llamaherd history`'s start-up. A test holds the two equal."""
    xdg = os.environ.get("XDG_STATE_HOME") or ""
    state = xdg if xdg.startswith("/") else os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(state, "llamaherd", DB_NAME)


class HistoryStore:
    def __init__(
        self, path: str | None = None, clock: Callable[[], float] = time.time, names: Mapping[str, str] | None = None
    ) -> None:
        self.path = path or default_path()
        self._clock = clock
        self.names = dict(names) if names is not None else None
        """Router scope -> the name the reading config gives that machine (history/scope.py: scope_names). Reads
        see only those routers' rows, under those names, and a machine filter is that machine's scope: the demo's
        `workstation` is not the operator's. None: every row as recorded (`history --all`)."""
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self.listeners: list[Callable[[Sequence[HistoryRow]], None]] = []
        """Called on the event loop with every batch `add` stored (the dashboard's last reason per model)."""

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
            # Read through a memory map: a day's 100,000 rows are ~10,000 pages, each a read() call otherwise.
            db.execute(f"PRAGMA mmap_size={MMAP_SIZE}")
            db.execute(f"PRAGMA cache_size=-{PAGE_CACHE_KIB}")
            db.executescript(_SCHEMA)
            columns = {c[1] for c in db.execute("PRAGMA table_info(transitions)")}
            if "line" not in columns:
                # A database from before the JSON line was stored: its rows' lines are made when read.
                db.execute("ALTER TABLE transitions ADD COLUMN line TEXT NOT NULL DEFAULT ''")
            if "scope" not in columns:
                # From before rows were scoped by router: those rows stay, unscoped (shown by `history --all`).
                db.execute("ALTER TABLE transitions ADD COLUMN scope TEXT NOT NULL DEFAULT ''")
            # No index on scope: read in time order (the primary key) and filtered, a query is one range read; with
            # one, SQLite took the rows by scope and sorted them again (2.7x the CPU for 100,000 rows).
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
        if not batch:
            return 0
        new = await self._call(lambda db: self._add(db, batch))
        for listener in self.listeners:
            listener(batch)
        return new

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
                key = r.key or f"live:{r.scope or r.machine}:{r.router}:{r.model}:{r.to_state}:{r.time:.6f}"
                had = db.execute("SELECT detail FROM transitions WHERE key = ?", (key,)).fetchone()
                if had is None:
                    db.execute(
                        "INSERT INTO transitions (time, machine, router, model, from_state, to_state, reason, detail,"
                        " key, scope) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (*r[:8], key, r.scope),  # time, machine ... detail as HistoryRow orders them
                    )
                    new += 1
                elif len(r.detail) > len(had[0]):
                    db.execute("UPDATE transitions SET detail = ? WHERE key = ?", (r.detail, key))
                else:
                    continue
                # The row's JSON line, made once here rather than for every row of every `history --json`.
                db.execute(f"UPDATE transitions SET line = {_JSON_OBJECT} WHERE key = ?", (key,))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return new

    @staticmethod
    def _recorded(db: sqlite3.Connection, r: HistoryRow) -> bool:
        row = db.execute(
            "SELECT 1 FROM transitions WHERE time BETWEEN ? AND ? AND (scope = ? OR scope = '' AND machine = ?)"
            " AND router = ? AND model = ? AND from_state = ? AND to_state = ? LIMIT 1",
            (r.time - SAME_EVENT_WITHIN, r.time + SAME_EVENT_WITHIN, r.scope, r.machine, r.router, r.model,
             r.from_state, r.to_state),
        ).fetchone()  # fmt: skip
        return row is not None

    async def note_request(self, machine: str, model: str, action: str, by: str) -> None:
        """This llamaherd asked (load, unload, start, stop): a later transition it explains says who asked."""
        now = self._now()

        where = self._requests_key(machine)

        def put(db: sqlite3.Connection) -> None:
            db.execute("INSERT INTO requests VALUES (?, ?, ?, ?, ?)", (now, where, model, action, by))

        await self._call(put)

    def _requests_key(self, machine: str) -> str:
        """Requests are noted by the router's scope where this store knows it: a config naming the router otherwise
        still finds who asked (else its read of the log put "load asked" over "by command `llamaherd load`")."""
        return next((sc for sc, name in (self.names or {}).items() if name == machine), machine)

    # ---- reading ----

    async def requests(self, machine: str, since: float) -> list[tuple[float, str, str, str]]:
        """(time, model, action, by) of the requests noted for a machine since then, oldest first."""
        where = self._requests_key(machine)

        def get(db: sqlite3.Connection) -> list[tuple[float, str, str, str]]:
            cur = db.execute(
                "SELECT time, model, action, by FROM requests WHERE machine = ? AND time >= ? ORDER BY time",
                (where, since),
            )
            return [(float(t), str(m), str(a), str(b)) for t, m, a, b in cur]

        return await self._call(get)

    async def query(self, since: float | None = None, machine: str | None = None, model: str | None = None,
                    reason: str | None = None, limit: int = QUERY_LIMIT) -> list[HistoryRow]:  # fmt: skip
        """Rows oldest first, filtered; the newest `limit` when there are more."""
        cols = "time, machine, router, model, from_state, to_state, reason, detail, '', scope"

        def get(db: sqlite3.Connection) -> list[HistoryRow]:
            cur = _select(db, cols, self.names, since, machine, model, reason, limit)
            return list(map(HistoryRow._make, cur))

        return await self._call(get)

    async def query_json(self, since: float | None = None, machine: str | None = None, model: str | None = None,
                         reason: str | None = None, limit: int = QUERY_LIMIT) -> bytes:  # fmt: skip
        """The same rows as JSON lines in UTF-8, one object a line (time as ISO 8601 UTC), each ending with a newline.

        Each row's line is made by SQLite when the row is stored, and the lines are joined by SQLite into bytes
        that are written as they are: for 100,000 rows, making the JSON when read cost ~270 ms of CPU (strftime and
        json_object per row), fetching one Python string a row ~90 ms more, the joined bytes ~55 ms in all."""

        def get(db: sqlite3.Connection) -> bytes:
            # The stored line names the machine as its recorder's config did: changed only where this one differs.
            renamed = f"CASE WHEN recorded = machine THEN {_STORED_LINE} ELSE {_RENAMED_LINE} END"
            line = f"{_STORED_LINE if self.names is None else renamed} AS c"
            got = _select(db, line, self.names, since, machine, model, reason, limit, outer=_JOINED).fetchone()
            return bytes(got[0]) + b"\n" if got and got[0] else b""

        return await self._call(get)

    async def query_table(self, since: float | None = None, machine: str | None = None, model: str | None = None,
                          reason: str | None = None, limit: int = QUERY_LIMIT) -> bytes:  # fmt: skip
        """The same rows as the text table `llamaherd history` prints (UTF-8, a newline after each line), b"" when
        none match. Laid out by SQLite: 100,000 rows formatted in Python (local time, padding) cost ~1.5 s of CPU.
        The stored text needs no making visible again: every row is made visible when stored (see _shown)."""

        def get(db: sqlite3.Connection) -> bytes:
            outer = "max(w0), max(w1), max(w2), max(w3), max(w4)"
            widest = _select(db, _WIDTHS, self.names, since, machine, model, reason, limit, outer=outer).fetchone()
            if widest is None or widest[0] is None:
                return b""
            w = [max(len(h), int(n)) for h, n in zip(TABLE_HEAD, widest, strict=False)]
            cells = "  ".join(f"%!-{n}s" for n in w) + "  %s"
            line = f"rtrim(printf('{cells}', {_TABLE_CELLS})) AS c"
            head = "  ".join([*(h.ljust(n) for h, n in zip(TABLE_HEAD, w, strict=False)), TABLE_HEAD[-1]])
            got = _select(db, line, self.names, since, machine, model, reason, limit, outer=_JOINED).fetchone()
            return head.encode() + b"\n" + bytes(got[0]) + b"\n"

        return await self._call(get)

    async def latest_per_model(self, since: float) -> list[HistoryRow]:
        """Each model's newest transition since then (one row per machine and model)."""
        cols = "max(time), machine, router, model, from_state, to_state, reason, detail, '', scope"

        def get(db: sqlite3.Connection) -> list[HistoryRow]:
            # SQLite gives the other columns of the row that holds the max().
            src = _source(self.names)
            cur = db.execute(
                f"SELECT {cols} FROM {src} WHERE time >= ? AND model != '' GROUP BY machine, model", (since,)
            )
            return list(map(HistoryRow._make, cur))

        return await self._call(get)

    async def count(self) -> int:
        return await self._call(lambda db: int(db.execute("SELECT count(*) FROM transitions").fetchone()[0]))


_JSON_OBJECT = (
    "json_object('time', strftime('%Y-%m-%dT%H:%M:%fZ', time, 'unixepoch'), 'machine', machine, 'router', router,"
    " 'model', model, 'from', from_state, 'to', to_state, 'reason', reason, 'detail', detail)"
)
TABLE_HEAD = ("TIME", "MACHINE", "MODEL", "CHANGE", "REASON", "DETAIL")
_TABLE_CELLS = (
    "strftime('%Y-%m-%d %H:%M:%S', time, 'unixepoch', 'localtime'), machine,"
    " CASE model WHEN '' THEN '(router)' ELSE model END, from_state || ' -> ' || to_state, reason, detail"
)
# The width of each padded cell of a row (the widest of each is taken over the rows _select bounds).
_WIDTHS = (
    "19 AS w0, length(machine) AS w1, max(length(model), 8 * (model = '')) AS w2,"
    " length(from_state) + length(to_state) + 4 AS w3, length(reason) AS w4"
)
# The rows' `c` joined by newlines in one UTF-8 value: no Python object per row. group_concat keeps the order of
# the ordered subquery it reads (SQLite before 3.44 has no ORDER BY inside an aggregate; the tests check the order).
_JOINED = "CAST(group_concat(c, char(10)) AS BLOB)"
# A row stored before lines were (line = ''): made when read.
_STORED_LINE = f"CASE WHEN line != '' THEN line ELSE {_JSON_OBJECT} END"
# The stored line with the machine as the reading config names it.
_RENAMED_LINE = f"json_set({_STORED_LINE}, '$.machine', machine)"


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


_COLUMNS = "time, key, router, model, from_state, to_state, reason, detail, line, scope"


def _source(names: Mapping[str, str] | None) -> str:
    """The rows a store reads, as a table: those of the routers in `names` under the names given there; with no
    `names`, every row as recorded. The names are the reading config's own (no quote survives
    _literal); a parameter cannot stand here, as the source comes before the query's other parameters."""
    if names is None:
        return "transitions"
    if not names:
        return f"(SELECT {_COLUMNS}, machine, machine AS recorded FROM transitions WHERE 0)"
    cases = " ".join(f"WHEN {_literal(sc)} THEN {_literal(n)}" for sc, n in names.items())
    scopes = ", ".join(_literal(sc) for sc in names)
    shown = f"CASE scope {cases} END AS machine, machine AS recorded"
    return f"(SELECT {_COLUMNS}, {shown} FROM transitions WHERE scope IN ({scopes}))"


def _select(db: sqlite3.Connection, cols: str, names: Mapping[str, str] | None, since: float | None,
            machine: str | None, model: str | None, reason: str | None, limit: int,
            outer: str = "") -> sqlite3.Cursor:  # fmt: skip
    """The newest `limit` rows that match, oldest first (`outer`: one row, that aggregate of their `cols`). The
    rows are stored in time order, so this is one range read in order: the time of the limit-th newest row is found
    first (sorting 100,000 rows cost more than reading them)."""
    src = _source(names)
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
    newest = f"SELECT time FROM {src} WHERE {cond} ORDER BY time DESC LIMIT 1 OFFSET ?"
    row = db.execute(newest, (*args, limit - 1)).fetchone()
    if row is not None:
        cond += " AND time >= ?"
        args.append(row[0])
    rows = f"SELECT {cols} FROM {src} WHERE {cond} ORDER BY time"
    return db.execute(f"SELECT {outer} FROM ({rows})" if outer else rows, args)


def _shown(r: HistoryRow) -> HistoryRow:
    """Names and detail as text that can be stored and shown: a lone surrogate from a router's JSON cannot be
    written as UTF-8, and a control character is shown, never interpreted, wherever the row is read."""
    fields = (r.machine, r.router, r.model, r.detail)
    if all(visible(f) == f for f in fields):
        return r
    machine, router, model, detail = (visible(f) for f in fields)
    return HistoryRow(r.time, machine, router, model, r.from_state, r.to_state, r.reason, detail, r.key, r.scope)
