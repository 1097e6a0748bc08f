"""The dashboard's entry point for the CLI: `run_dashboard(config) -> exit code`."""

from __future__ import annotations

from app.config import Config, default_config_path
from app.services.fleet import Fleet
from app.ui.app import make_app


def run_dashboard(config: Config) -> int:
    """Build the fleet and the app, run until the operator quits. Routers keep running afterwards."""
    # The path is said on the first run (no config file yet): where the config goes.
    app = make_app(config, Fleet(config), config_path=config.path or default_config_path())
    app.run()
    return app.return_code if app.return_code is not None else 0
