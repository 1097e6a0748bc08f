"""Headless fit check: `llamaherd fit MODEL [MACHINE] [--ctx N] [--json]`. Exit 0 when at least one machine
gave a verdict, 1 when none could, 2 usage/config."""

from __future__ import annotations

import argparse
import asyncio
import json

from app.cli.context import CliContext
from app.services.core.textsafe import visible
from app.services.fit.check import FitReport, check_machine
from app.services.machine.machine import Machine


async def cmd_fit(ctx: CliContext, args: argparse.Namespace) -> int:
    configs = [ctx.config.machine(args.machine)] if args.machine else list(ctx.config.effective_machines)
    machines = [Machine(c, emit=lambda ev: None) for c in configs]
    try:
        reports: list[FitReport] = await asyncio.gather(*(check_machine(m, args.model, args.ctx) for m in machines))
    finally:
        await asyncio.gather(*(m.close() for m in machines), return_exceptions=True)
    if args.json:
        print(json.dumps([r.as_json() for r in reports], indent=2))
    else:
        for r in reports:
            print(visible(r.line()))
    return 0 if any(r.verdict is not None for r in reports) else 1


def _ctx(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("a context size is 0 (the model's own) or more")
    return value


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "fit",
        help="will a model fit, where, and what will its load evict",
        description="Estimate a model's memory (weights + KV cache + compute + projector) from its GGUF header "
        "and settings, and give per machine a verdict (fits, tight, no) and the model its load would evict.",
    )
    p.add_argument("model", help="model name (preset section) or alias")
    p.add_argument("machine", nargs="?", help="machine name from config.toml (default: every machine)")
    p.add_argument("--ctx", type=_ctx, metavar="N", help="context size to estimate for (default: the preset's)")
    p.add_argument("--json", action="store_true", help="print one JSON object per machine")
    p.set_defaults(func=cmd_fit)
