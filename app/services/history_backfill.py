"""Transitions of a managed router read back from its log on the serving machine, with the record's start time.

Used live (a model changed: read what the log says of it) and as backfill (on adopt, and by `llamaherd history`):
the same log read twice gives the same keyed rows, so the store adds only what it did not have, and the time no
llamaherd ran is covered.
"""

from __future__ import annotations

import asyncio

from app.services.bounded import MAX_LOG_LINE
from app.services.errors import HerdError
from app.services.history_reasons import LOG_PATTERN, Transition, transitions
from app.services.history_store import HistoryRow, HistoryStore
from app.services.machine import Machine
from app.services.routers import RouterRecord

# Bounds of one read: the log's last LOG_BYTES, of which only the lines that say something of a transition, the
# last LOG_LINES of those, each cut at MAX_LOG_LINE.
LOG_BYTES = 64 * 1024 * 1024
LOG_LINES = 20_000
_READ = '[ -r "$1" ] || exit 1; tail -c "$2" -- "$1" | grep -E -e "$3" | tail -n "$4" | cut -b "1-$5"'
# A transition this llamaherd asked for is matched to its request within this window (the router acts at once).
ASKED_BEFORE = 15.0
ASKED_AFTER = 2.0
_ACTION = {"loading": "load", "unloaded": "unload", "failed": "unload"}


async def read_transitions(m: Machine) -> tuple[RouterRecord, list[Transition]] | None:
    """The managed router's record and the transitions its log holds for its current run (None: no record)."""
    if m.manager is None:
        return None
    rec = await m.manager.read_record()
    if rec is None:
        return None
    r = await m.transport.run(
        ["sh", "-c", _READ, "sh", rec.log, str(LOG_BYTES), LOG_PATTERN, str(LOG_LINES), str(MAX_LOG_LINE)]
    )
    if not r.ok:
        return rec, []
    raws = r.stdout.decode(errors="replace").splitlines()
    ports = dict(m.attributor.ports)
    # Up to LOG_LINES lines to parse: in a thread, so the dashboard's loop never waits on it.
    return rec, await asyncio.to_thread(transitions, raws, ports)


def rows_of(m: Machine, rec: RouterRecord, found: list[Transition],
            asked: list[tuple[float, str, str, str]]) -> list[HistoryRow]:  # fmt: skip
    """Rows keyed by router run and log time; a "requested" one names who asked when this llamaherd did."""
    base = rec.started_at or rec.start_time
    unused = list(asked)
    rows = []
    for t in found:
        at = base + t.at_us / 1e6
        detail = t.detail
        if t.reason == "requested":
            want = _ACTION.get(t.to_state)
            for i, (when, model, action, by) in enumerate(unused):
                if model == t.model and action == want and at - ASKED_BEFORE <= when <= at + ASKED_AFTER:
                    detail = f"by {by}"
                    del unused[i]
                    break
        key = f"log:{m.name}:{m.cfg.router}:{base:.3f}:{t.at_us}:{t.model}:{t.to_state}"
        rows.append(HistoryRow(at, m.name, m.cfg.router, t.model, t.from_state, t.to_state, t.reason, detail, key))
    return rows


async def backfill(m: Machine, store: HistoryStore) -> int:
    """Add what the managed router's log says that the history does not hold yet; how many rows were new."""
    try:
        got = await read_transitions(m)
    except HerdError:
        return 0  # the machine is not reachable: nothing to read now, the next look tries again
    if got is None:
        return 0
    rec, found = got
    if not found:
        return 0
    base = rec.started_at or rec.start_time
    asked = await store.requests(m.name, base - ASKED_BEFORE)
    return await store.add(rows_of(m, rec, found, asked))
