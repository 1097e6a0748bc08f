"""Reaching a machine's router from here. Attach-only machines (a url) for now; managed routers come from the
router manager once the machine layer exists."""

from __future__ import annotations

from app.config import MachineConfig
from app.services.errors import ConfigError
from app.services.router_api import RouterClient


def client_for_url(machine: MachineConfig) -> RouterClient:
    if machine.url is None:
        raise ConfigError(f"machine {machine.name!r} has no url")
    return RouterClient(machine.url, api_key=machine.api_key())
