"""`llamaherd top`: how busy each loaded model is, refreshed every ui.activity_every seconds, as a table or JSON.

Rates are differences between two polls, so the first figures come one interval after the start (`--once` waits
that interval, then prints once). Only loaded models are asked, with autoload=false: `top` never loads a model.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from dataclasses import dataclass
from typing import Any

from app.cli.context import CliContext
from app.cli.wording import say
from app.services.activity.metrics import ModelActivity, busiest_first
from app.services.activity.poll import ActivityChanged, ActivityPoller, Target
from app.services.core.errors import HerdError
from app.services.core.router_types import ModelState
from app.services.core.textsafe import visible
from app.services.machine.machine import Machine

LIST_TIMEOUT = 10.0
CLEAR = "\x1b[H\x1b[2J"


@dataclass
class Watched:
    """One machine as `top` sees it this round: its loaded models, or why it has none to show."""

    machine: Machine
    models: tuple[str, ...] = ()
    problem: str = ""


async def look(w: Watched) -> Target | None:
    """The machine's loaded models now (GET /models), connecting to its router first when need be."""
    try:
        async with asyncio.timeout(LIST_TIMEOUT):
            client = await w.machine.router_client()
            models = await client.models()
    except TimeoutError:
        w.models, w.problem = (), f"{w.machine.name}: router not answering (no list within {LIST_TIMEOUT:g} s)"
        return None
    except HerdError as e:
        w.models, w.problem = (), say(e)
        stale, w.machine.client = w.machine.client, None  # looked at afresh next round (it may be started)
        if stale is not None:
            await stale.aclose()
        return None
    w.problem = ""
    w.models = tuple(m.id for m in models if m.state is ModelState.LOADED)
    return Target(w.machine.name, client, w.models) if w.models else None


def figure(v: float | None) -> str:
    return "—" if v is None else f"{v:.1f}"


def count(v: int | None) -> str:
    return "—" if v is None else str(v)


def table(watched: list[Watched], rounds: list[ActivityChanged]) -> str:
    acts = busiest_first(a for r in rounds for a in r.models)
    rows = [("MACHINE", "MODEL", "TOK/S", "PROMPT/S", "REQS", "QUEUED", "SLOTS")]
    for a in acts:
        slots = "—" if a.slots_busy is None else f"{a.slots_busy}/{count(a.slots_total)}"
        rows.append(
            (
                visible(a.machine),
                visible(a.model),
                figure(a.tokens_per_s),
                figure(a.prompt_tokens_per_s),
                count(a.requests_processing),
                count(a.requests_deferred),
                slots,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    if len(rows) == 1:
        lines.append("(no loaded model)")
    lines += not_answering_lines(rounds)
    lines += [visible(w.problem) for w in watched if w.problem]
    lines += [visible(f"{r.machine}: {r.hint}") for r in rounds if r.hint]
    return "\n".join(lines)


def not_answering_lines(rounds: list[ActivityChanged]) -> list[str]:
    """Loaded models whose children stopped answering (issue 35): no figures to show, so counted and named."""
    silent = [(r.machine, r.not_answering) for r in rounds if r.not_answering]
    total = sum(len(models) for _, models in silent)
    if not total:
        return []
    out = [f"{total} loaded model{'s' if total != 1 else ''} not answering (/metrics unanswered, polls in a row):"]
    return out + [visible(f"  {machine}: {', '.join(models)}") for machine, models in silent]


def model_json(a: ModelActivity) -> dict[str, Any]:
    def rounded(v: float | None) -> float | None:
        return None if v is None else round(v, 2)

    return {
        "machine": a.machine,
        "model": a.model,
        "metrics": a.metrics,
        "tokens_per_s": rounded(a.tokens_per_s),
        "prompt_tokens_per_s": rounded(a.prompt_tokens_per_s),
        "requests_processing": a.requests_processing,
        "requests_deferred": a.requests_deferred,
        "slots_busy": a.slots_busy,
        "slots_total": a.slots_total,
        "kv_cells_used": a.kv_cells_used,
    }


def document(watched: list[Watched], rounds: list[ActivityChanged], now: float) -> dict[str, Any]:
    by_machine = {r.machine: r for r in rounds}
    machines = []
    for w in watched:
        r = by_machine.get(w.machine.name)
        machines.append({
            "machine": w.machine.name, "problem": w.problem or None, "hint": r.hint if r else None,
            "not_answering": list(r.not_answering) if r else [],
        })  # fmt: skip
    acts = busiest_first(a for r in rounds for a in r.models)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))
    return {"time": stamp, "models": [model_json(a) for a in acts], "machines": machines}


async def cmd_top(ctx: CliContext, args: argparse.Namespace) -> int:
    configs = [ctx.config.machine(args.machine)] if args.machine else list(ctx.config.effective_machines)
    watched = [Watched(Machine(c, emit=lambda ev: None)) for c in configs]
    targets: list[Target] = []
    poller = ActivityPoller(lambda: targets, every=ctx.config.ui.activity_every)
    tty = sys.stdout.isatty() and not args.json
    try:
        first = True
        while True:
            began = time.monotonic()
            looked = await asyncio.gather(*(look(w) for w in watched))
            targets[:] = [t for t in looked if t is not None]
            rounds = await poller.poll()
            # The first round has no rates yet (they are differences): it is not shown.
            if not first:
                if args.json:
                    print(json.dumps(document(watched, rounds, time.time()), separators=(",", ":")))
                else:
                    print((CLEAR if tty else "") + table(watched, rounds) + ("" if tty or args.once else "\n"))
                sys.stdout.flush()
                if args.once:
                    return 0
            first = False
            await asyncio.sleep(max(0.0, poller.every - (time.monotonic() - began)))
    finally:
        with contextlib.suppress(Exception):
            await asyncio.gather(*(w.machine.close() for w in watched), return_exceptions=True)


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "top",
        help="how busy each loaded model is: requests, slots, tokens/s",
        description="Per loaded model: generation and prompt tokens/s (from counter differences between two polls), "
        "requests processing and deferred, busy slots of total; busiest first. Refreshed every ui.activity_every "
        "seconds (default 2). Needs the router's --metrics (routers llamaherd starts have it). Never loads a model.",
    )
    p.add_argument("machine", nargs="?", help="machine name from config.toml (default: every machine)")
    p.add_argument("--json", action="store_true", help="one JSON document per refresh, one per line")
    p.add_argument(
        "--once", action="store_true", help="print one refresh and exit (after one interval: rates need two polls)"
    )
    p.set_defaults(func=cmd_top)
