"""`llamaherd watch`: follow the fleet with no screen, running the [[hooks]] and recording the history, so both
work with no terminal open (a systemd user unit: see the README). One line per hook run on stdout; a hook's
failure once on stderr. Stops on Ctrl+C or SIGTERM; the routers keep running.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys

from app.cli.context import CliContext
from app.services.core.textsafe import visible
from app.services.fleet import Fleet
from app.services.history.recorder import HistoryRecorder
from app.services.history.scope import scope_names
from app.services.history.store import HistoryStore
from app.services.hooks.runner import HookRun, HookRunner


def _ran(run: HookRun) -> None:
    s = run.situation
    how = f"exit {run.exit_code}" if run.exit_code is not None else run.error
    what = f"{s.event} on {s.machine}" + (f" ({s.model})" if s.model else "")
    print(visible(f"hook {run.hook.command[0]} for {what}: {how}"), flush=True)


async def cmd_watch(ctx: CliContext, args: argparse.Namespace) -> int:
    config = ctx.config
    if not config.hooks:
        print("llamaherd watch: no [[hooks]] in the config; recording the history only", file=sys.stderr, flush=True)
    fleet = Fleet(config)
    history = HistoryStore(names=scope_names(config.effective_machines))
    fleet.history, fleet.asked_by = history, "llamaherd watch"
    recorder = HistoryRecorder(fleet, history)

    def said(text: str) -> None:
        print(f"llamaherd watch: {text}", file=sys.stderr, flush=True)

    hooks = HookRunner(config.hooks, said=said, env_of=fleet.router_env, ran=_ran)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await fleet.start()
    events = fleet.subscribe()
    tasks = [asyncio.create_task(recorder.run(), name="history"), asyncio.create_task(hooks.follow(events))]
    print(f"llamaherd watch: following {len(fleet.names)} machine(s), {len(config.hooks)} hook(s)", flush=True)
    try:
        await stop.wait()
    finally:
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        fleet.unsubscribe(events)
        await hooks.close()
        await fleet.close()
        history.close()
    return 0


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "watch",
        help="follow the fleet with no screen: run the [[hooks]], record the history",
        description="Follow every machine as the dashboard does, with no screen: run the config's [[hooks]] when a "
        "model fails or stops answering, a machine becomes unreachable or comes back, a router exits; and record "
        "the history. For a systemd user unit. Ctrl+C or SIGTERM stops it; the routers keep running.",
    )
    p.set_defaults(func=cmd_watch)
