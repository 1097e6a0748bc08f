"""`llamaherd history`: every model and router transition, with why, from the local history database.

Before answering, the log of each managed router is read back (backfill), so the answer covers the time no
llamaherd ran; a machine that cannot be reached in BACKFILL_TIMEOUT is answered from what is stored, with a note.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import time
from typing import TYPE_CHECKING

from app.errors import ConfigError, HerdError
from app.services.core.waits import within

if TYPE_CHECKING:  # imported where used: `llamaherd history` starts without the machine and ssh modules
    from app.cli.context import CliContext
    from app.config import MachineConfig
    from app.services.history.store import HistoryStore
    from app.services.machine.machine import Machine

BACKFILL_TIMEOUT = 15.0
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_SPAN = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")


def parse_since(text: str) -> float:
    """`90s`, `30m`, `1h`, `2d`, `1h30m` as seconds; anything else is a usage error."""
    parts = _SPAN.findall(text.strip().lower())
    if not parts or "".join(n + u for n, u in parts) != text.strip().lower():
        raise ConfigError(f"--since {text!r}: give a span like 90s, 30m, 1h, 2d or 1h30m")
    return sum(float(n) * _UNITS[u] for n, u in parts)


async def _backfill_one(ctx: CliContext, mc: MachineConfig, store: HistoryStore) -> None:
    if mc.attach_only:
        return  # somebody else's router: its log is not ours to read
    from app.cli.output import err

    try:
        async with ctx.machine(mc.name) as m:
            await within(_connect_and_fill(m, store), BACKFILL_TIMEOUT)
    except (HerdError, TimeoutError, OSError) as e:
        err(f"history of {mc.name}: its router log was not read ({e or 'no answer in time'}); showing what is stored")


async def _connect_and_fill(m: Machine, store: HistoryStore) -> None:
    from app.services.history.backfill import backfill

    await m.transport.connect()
    await backfill(m, store)


async def note_request(machine: str, model: str, action: str, command: str, scope: str = "") -> None:
    """A command asked: noted so the history names it; a history that cannot be written stops nothing. `scope`: the
    router's (history/scope.py), so that a config naming it otherwise finds the note too."""
    import sqlite3

    from app.services.history.store import HistoryStore

    store = HistoryStore(names={scope: machine} if scope else None)
    try:
        await store.note_request(machine, model, action, f"command `llamaherd {command}`")
    except (sqlite3.Error, OSError):
        pass
    finally:
        store.close()


async def note_router(cfg: MachineConfig, was: str, now: str, detail: str, command: str) -> None:
    """A command started or stopped a router: recorded, as the dashboard would have recorded it."""
    import sqlite3

    from app.services.history.scope import router_scope
    from app.services.history.store import HistoryRow, HistoryStore

    store = HistoryStore()
    try:
        detail = f"by command `llamaherd {command}`" + (f"; {detail}" if detail else "")
        row = HistoryRow(time.time(), cfg.name, cfg.router, "", was, now, "requested", detail, scope=router_scope(cfg))
        await store.add([row])
    except (sqlite3.Error, OSError):
        pass
    finally:
        store.close()


async def cmd_history(ctx: CliContext, args: argparse.Namespace) -> int:
    from app.services.history.scope import scope_names
    from app.services.history.store import HistoryStore

    since = time.time() - parse_since(args.since)
    machines = [ctx.config.machine(args.machine)] if args.machine else list(ctx.config.effective_machines)
    # This config's routers only, under its names (another config's `workstation` is another router); --all: every
    # row stored, as recorded, with those from before rows were scoped.
    store = HistoryStore(names=None if args.all else scope_names(ctx.config.effective_machines))
    try:
        if not args.no_backfill:
            await asyncio.gather(*(_backfill_one(ctx, mc, store) for mc in machines))
        if args.json:
            lines = await store.query_json(since, args.machine, args.model, args.reason)
            sys.stdout.flush()
            sys.stdout.buffer.write(lines)
            return 0
        text = await store.query_table(since, args.machine, args.model, args.reason)
    finally:
        store.close()
    if text:
        sys.stdout.flush()
        sys.stdout.buffer.write(text)
    else:
        print("no transitions recorded in that span")
    return 0


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "history",
        help="what changed on the routers and why (loads, unloads, evictions, crashes)",
        description="Every model and router transition with its reason, oldest first, from llamaherd's history "
        "database. Managed routers' logs are read first, so the time no llamaherd ran is covered. Reasons from an "
        "attached router's events are marked 'inferred'.",
    )
    p.add_argument("machine", nargs="?", help="only this machine (default: every machine)")
    p.add_argument("--model", help="only this model")
    p.add_argument("--reason", help="only this reason (evicted, preset reload, crashed, requested, ...)")
    p.add_argument("--since", default="24h", help="how far back: 90s, 30m, 1h, 2d ... (default 24h)")
    p.add_argument("--json", action="store_true", help="one JSON object per line: time, machine, model, from, to, "
                   "reason, detail (and router)")  # fmt: skip
    p.add_argument("--no-backfill", action="store_true", help="answer from the database only, reading no log")
    p.add_argument(
        "--all",
        action="store_true",
        help="every router's rows as recorded, not only this config's routers "
        "(under the names the recording config gave; rows from before routers were told apart too)",
    )
    p.set_defaults(func=cmd_history)
