"""The dashboard's entry point for the CLI: `run_dashboard(config) -> exit code`."""

from __future__ import annotations

import asyncio

from app.config import Config, default_config_path
from app.services.core.operator_presence import OperatorHands
from app.services.fleet import Fleet
from app.services.history.recorder import HistoryRecorder
from app.services.history.scope import scope_names
from app.services.history.store import HistoryStore
from app.services.hooks.runner import HookRunner
from app.ui.app import make_app


def run_dashboard(config: Config, hands: OperatorHands | None = None) -> int:
    """Build the fleet and the app, run until the operator quits. Routers keep running afterwards. `hands`: where
    a scenario playing beside the operator (the demo's) learns what they act on."""
    fleet = Fleet(config)
    history = HistoryStore(names=scope_names(config.effective_machines))  # this config's routers, by its names
    fleet.history, fleet.asked_by = history, "the dashboard"
    recorder = HistoryRecorder(fleet, history)

    def said(text: str) -> None:  # a hook's failure, once per broken hook (services/hooks/runner.py)
        app.notify(text, title="hook", severity="warning", timeout=10, markup=False)

    hooks = HookRunner(config.hooks, said=said, env_of=fleet.router_env)

    async def background() -> None:
        """The history recorder, and the [[hooks]] beside it on their own subscription."""
        if not config.hooks:
            await recorder.run()
            return
        events = fleet.subscribe()
        try:
            await asyncio.gather(recorder.run(), hooks.follow(events))
        finally:
            fleet.unsubscribe(events)
            await hooks.close()

    # The path is said on the first run (no config file yet): where the config goes.
    app = make_app(config, fleet, config_path=config.path or default_config_path(), history=history,
                   recorder=background, hands=hands)  # fmt: skip
    try:
        app.run()
    finally:
        history.close()
    return app.return_code if app.return_code is not None else 0
