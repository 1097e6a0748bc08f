"""Headless router commands: models, load, unload, events. Exit 0 done, 1 refused or failed, 2 usage/config."""

from __future__ import annotations

import argparse
import sys

from app.cli.context import CliContext
from app.cli.history_cmds import note_request
from app.cli.output import EventLines, err, models_table, print_json_list, to_jsonable
from app.cli.wording import say
from app.services.core.errors import HerdError
from app.services.core.textsafe import visible
from app.services.history.scope import router_scope
from app.services.router.event_stream import router_events
from app.services.router.load_and_wait import ensure_loaded


async def cmd_models(ctx: CliContext, args: argparse.Namespace) -> int:
    async with ctx.router(args.machine) as r:
        models = await r.client.models()
    if args.json:
        print_json_list([to_jsonable(m) for m in models])
    else:
        print(models_table(models))
    return 0


async def cmd_load(ctx: CliContext, args: argparse.Namespace) -> int:
    async with ctx.router(args.machine) as r:
        await note_request(args.machine, args.model, "load", "load", router_scope(r.machine.cfg))
        if not args.wait:
            asked = await r.client.load(args.model)
            print(visible(f"{args.model}: load requested" if asked else f"{args.model}: already running"))
            return 0
        try:
            info = await ensure_loaded(r.client, args.model, timeout=args.timeout, log_tail=r.model_log_tail)
        except HerdError as e:
            err(say(e))
            return 1
    ctx_text = f" (n_ctx {info.n_ctx})" if info and info.n_ctx else ""
    print(visible(f"{args.model}: loaded{ctx_text}"))
    return 0


async def cmd_unload(ctx: CliContext, args: argparse.Namespace) -> int:
    async with ctx.router(args.machine) as r:
        await note_request(args.machine, args.model, "unload", "unload", router_scope(r.machine.cfg))
        await r.client.unload(args.model)
    print(visible(f"{args.model}: unload requested"))
    return 0


async def cmd_events(ctx: CliContext, args: argparse.Namespace) -> int:
    lines = EventLines()
    async with ctx.router(args.machine) as r:
        async for ev in router_events(r.client):
            text = lines.line(ev)
            if text is not None:
                sys.stdout.write(text + "\n")
                sys.stdout.flush()
    return 0


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "models",
        help="list a router's models with their status",
        description="List every model a machine's router knows, with its status.",
    )
    p.add_argument("machine", help="machine name from config.toml")
    p.add_argument("--json", action="store_true", help="print the list as JSON")
    p.set_defaults(func=cmd_models)

    p = sub.add_parser(
        "load",
        help="ask a router to load a model",
        description="Ask a machine's router to load a model (already loaded is fine).",
    )
    p.add_argument("machine", help="machine name from config.toml")
    p.add_argument("model", help="model name (preset section) or alias")
    p.add_argument("--wait", action="store_true", help="wait until it is loaded; exit 1 with the reason if it fails")
    p.add_argument(
        "--timeout", type=float, default=300.0, help="seconds --wait allows a model that never answers (default 300)"
    )
    p.set_defaults(func=cmd_load)

    p = sub.add_parser(
        "unload",
        help="ask a router to unload a model",
        description="Unload one model; the router and every other model are left alone.",
    )
    p.add_argument("machine", help="machine name from config.toml")
    p.add_argument("model", help="model name or alias")
    p.set_defaults(func=cmd_unload)

    p = sub.add_parser(
        "events",
        help="print router events as JSON lines until interrupted",
        description="Follow GET /models/sse: one JSON line per event, across reconnects. "
        "Each (re)connect prints the full list as a 'models' line; the list re-read every 30 s of silence is "
        "printed only when it differs from what the lines so far said.",
    )
    p.add_argument("machine", help="machine name from config.toml")
    p.set_defaults(func=cmd_events)
