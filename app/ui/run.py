"""The dashboard's entry point for the CLI: `run_dashboard(config) -> exit code`."""

from __future__ import annotations

from app.config import Config
from app.services.fleet import Fleet
from app.ui.app import make_app


def run_dashboard(config: Config) -> int:
    """Build the fleet and the app, run until the operator quits. Routers keep running afterwards."""
    app = make_app(config, Fleet(config))
    app.run()
    return app.return_code if app.return_code is not None else 0
