"""The dashboard (the default command) and `llamaherd demo`."""

from __future__ import annotations

import argparse
import asyncio
import threading
from pathlib import Path

from app.cli.output import err
from app.cli.wording import say
from app.config import Config
from app.demo import Traffic, demo_dir, prepare_and_start, stop_routers
from app.services.core.errors import HerdError
from app.services.core.operator_presence import OperatorHands


def run_dashboard(config: Config, hands: OperatorHands | None = None) -> int:
    from app.ui.run import run_dashboard as run  # textual is imported only when a screen is wanted

    return run(config, hands)


def cmd_dashboard(config: Config, args: argparse.Namespace) -> int:
    return run_dashboard(config)


def cmd_demo(config: Config, args: argparse.Namespace) -> int:
    root = Path(args.dir) if args.dir else demo_dir()
    print(f"llamaherd demo: writing tiny models and starting three routers under {root} ...", flush=True)
    try:
        demo_config, started = asyncio.run(prepare_and_start(root))
    except HerdError as e:
        err(f"the demo could not start: {say(e)}")
        return 1
    adopted = len(demo_config.machines) - len(started)
    if adopted:
        print(f"llamaherd demo: adopted {adopted} router(s) already running from an earlier demo", flush=True)
    hands = OperatorHands()
    if args.traffic:
        traffic = Traffic(demo_config, hands=hands)
        threading.Thread(target=lambda: asyncio.run(traffic.run()), name="demo-traffic", daemon=True).start()
    try:
        return run_dashboard(demo_config, hands)
    finally:
        if args.keep:
            print(
                f"llamaherd demo: routers left running (--keep); `llamaherd demo` adopts them. "
                f"Headless: llamaherd --config {root / 'config.toml'} status"
            )
        elif started:
            asyncio.run(stop_routers(demo_config, started))
            print(f"llamaherd demo: stopped the {len(started)} router(s) this demo started")


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "dashboard",
        help="open the dashboard (the default)",
        description="Open the dashboard on the machines of config.toml.",
    )
    p.set_defaults(func=cmd_dashboard, sync=True)

    p = sub.add_parser(
        "demo",
        help="start a real local demo fleet and open the dashboard on it",
        description="Write tiny GGUF models, start three real llama-server routers standing in "
        "for three machines, and open the dashboard on them. Nothing is downloaded.",
    )
    p.add_argument(
        "--keep", action="store_true", help="leave the routers running on exit (the next `llamaherd demo` adopts them)"
    )
    p.add_argument(
        "--traffic",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="keep a gentle, repeatable scenario running: loads, unloads, completions (default on)",
    )
    p.add_argument("--dir", metavar="DIR", help="demo state directory (default: $XDG_STATE_HOME/llamaherd/demo)")
    p.set_defaults(func=cmd_demo, sync=True, needs_config=False)
