"""Transitions of a managed router read back from its log on the serving machine, with the record's start time.

Used live (a model changed: read what the log says of it) and as backfill (on adopt, and by `llamaherd history`):
the same log read twice gives the same keyed rows, so the store adds only what it did not have, and the time no
llamaherd ran is covered.
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass

from app.services.core.bounded import MAX_LOG_LINE
from app.services.core.errors import HerdError
from app.services.history.log_readback import TAIL_WINDOW, read_matches
from app.services.history.reasons import LOG_PATTERN, LogReasons, Transition, run_reasons
from app.services.history.scope import router_scope
from app.services.history.store import HistoryRow, HistoryStore
from app.services.lifecycle.manager import RouterRecord
from app.services.machine.machine import Machine

# Bounds of one read: the log's last LOG_BYTES, of which only the lines that say something of a transition, the
# last LOG_LINES of those, each cut at MAX_LOG_LINE.
LOG_BYTES = 64 * 1024 * 1024
LOG_LINES = 20_000
# $1 log, $2 where the last read ended (-1: none), $3 LOG_BYTES, $4 pattern, $5 LOG_LINES, $6 MAX_LOG_LINE.
# The first line out is "END MODE": END the offset read up to (the end of the last whole line: a line being written
# is read next time), MODE "more" when the read began at $2, else "full" (first read, the log was cut, or more
# than LOG_BYTES were written since: the last LOG_BYTES up to END were read instead).
_READ = rf"""[ -r "$1" ] || exit 1
size=$(wc -c < "$1") || exit 1
end=$size
if [ "$size" -gt 0 ] && [ "$(tail -c +"$size" -- "$1" | head -c 1 | wc -l)" -eq 0 ]; then
  s=$((size > {TAIL_WINDOW} ? size - {TAIL_WINDOW} : 0))
  end=$((size - $(tail -c +$((s + 1)) -- "$1" | head -c $((size - s)) | tail -n 1 | wc -c)))
fi
off=$2 mode=more
if [ "$off" -lt 0 ] || [ "$off" -gt "$end" ] || [ $((end - off)) -gt "$3" ]; then
  off=$((end > $3 ? end - $3 : 0)) mode=full
fi
echo "$end $mode"
tail -c +$((off + 1)) -- "$1" | head -c $((end - off)) | tr -d '\000' | LC_ALL=C grep -E -e "$4" | tail -n "$5" |
  cut -b "1-$6"
"""
# `tr -d '\000'` and LC_ALL=C: GNU grep takes input holding a NUL (a log's tail after a crash can be zeros), or
# bytes that are not text in the user's locale, for a binary file and prints "Binary file (standard input)
# matches" instead of the lines. busybox's grep has no -a; tr -d is POSIX. history/log_readback.py drops NULs the
# same way.
# A transition this llamaherd asked for is matched to its request within this window (the router acts at once).
ASKED_BEFORE = 15.0
ASKED_AFTER = 2.0
_ACTION = {"loading": "load", "unloaded": "unload", "failed": "unload"}


@dataclass
class _Cursor:
    """Where the last read of one router run's log ended, and the parser that read it: the next read asks only for
    what was written since (a model change no longer re-reads the run's last LOG_LINES lines)."""

    run: tuple[str, float]  # the record's log and start: another run (or log) reads from scratch
    offset: int
    parser: LogReasons


# One cursor per machine object, gone with it (a dashboard's machines; a CLI command's are read once).
_cursors: weakref.WeakKeyDictionary[Machine, _Cursor] = weakref.WeakKeyDictionary()


async def read_transitions(m: Machine) -> tuple[RouterRecord, list[Transition]] | None:
    """The managed router's record and the transitions its log holds for its current run (None: no record).
    After the first read, only the transitions of lines written since, and the evictions still waiting for the
    spawn that names the model they made room for (the store keeps each once, by key, and takes a longer detail)."""
    if m.manager is None:
        return None
    rec = await m.manager.read_record()
    if rec is None:
        return None
    run = (rec.log, rec.started_at or rec.start_time)
    cur = _cursors.get(m)
    if cur is not None and cur.run != run:
        cur = None
    # A run not read yet is read from where it began in the log (a full read of the log's end parsed every earlier
    # run's lines only to keep this one's: at each router restart, a burst growing with the log).
    first = rec.log_offset if rec.log_offset is not None else -1
    off = cur.offset if cur is not None else first
    read = await _read(m, rec.log, off)
    if read is None:
        return rec, []
    head, _, body = read.decode(errors="replace").partition("\n")
    end_s, _, mode = head.partition(" ")
    if not end_s.isdigit():
        return rec, []
    raws = body.splitlines()
    ports = dict(m.attributor.ports)
    # Up to LOG_LINES lines to parse: in a thread, so the dashboard's loop never waits on it.
    found = await asyncio.to_thread(_parse, cur if mode == "more" else None, raws, ports)
    if found is None:  # the lines since belong to a new run: read the log again from scratch
        _cursors.pop(m, None)
        return await read_transitions(m) if cur is not None else (rec, [])
    parser, out = found
    _cursors[m] = _Cursor(run, int(end_s), parser)
    return rec, out


async def _read(m: Machine, log: str, off: int) -> bytes | None:
    """What _READ prints for the log from `off` (None: it could not be read): in this process when the log is on
    this machine and little is new, else by the shell on the machine that has it."""
    if m.transport.is_local:
        here = await asyncio.to_thread(read_matches, log, off, LOG_BYTES, LOG_PATTERN, LOG_LINES, MAX_LOG_LINE)
        if here is not None:
            return here
    args = [log, str(off), str(LOG_BYTES), LOG_PATTERN, str(LOG_LINES), str(MAX_LOG_LINE)]
    r = await m.transport.run(["sh", "-c", _READ, "sh", *args])
    return r.stdout if r.ok else None


def _parse(cur: _Cursor | None, raws: list[str],
           ports: dict[int, str]) -> tuple[LogReasons, list[Transition]] | None:  # fmt: skip
    if cur is None:
        parser, out = run_reasons(raws, ports)
    else:
        parser = cur.parser
        parser.att.ports.update(ports)
        more = parser.feed_more(raws)
        if more is None:
            return None
        out = more
    out = [*out, *parser.held]
    out.sort(key=lambda t: t.at_us)
    return parser, out


def rows_of(m: Machine, rec: RouterRecord, found: list[Transition],
            asked: list[tuple[float, str, str, str]]) -> list[HistoryRow]:  # fmt: skip
    """Rows keyed by router run and log time; a "requested" one names who asked when this llamaherd did."""
    base = rec.started_at or rec.start_time
    scope = router_scope(m.cfg)
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
        # keyed by the router's scope, not the machine's name: two configs naming it differently read one log
        key = f"log:{scope}:{base:.3f}:{t.at_us}:{t.model}:{t.to_state}"
        rows.append(HistoryRow(at, m.name, m.cfg.router, t.model, t.from_state, t.to_state, t.reason, detail, key,
                               scope))  # fmt: skip
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
