"""HerdApp is what the screens ask of the app (app/ui/state/app_protocol.py): mypy checks the assignment below against
the Protocol, so a member renamed on one side and not the other fails the lint, not an operator's key press."""

from __future__ import annotations

from app.config import Config
from app.ui.app import make_app
from app.ui.state.app_protocol import HerdApi
from tests.helpers.standin_fleet import demo_fleet


def test_the_app_is_what_the_screens_ask_for() -> None:
    app = make_app(Config(), demo_fleet(), frozen_time=1000.0)
    api: HerdApi = app
    assert api.state is app.state and api.fleet is app.fleet and api.now() == 1000.0
