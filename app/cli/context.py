"""What every command needs: the config, and a way to reach a machine's router."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from app.config import Config
from app.services.access import client_for_url
from app.services.router_api import RouterClient


@dataclass
class RouterHandle:
    client: RouterClient

    async def model_log_tail(self, model: str) -> list[str]:
        return []


@dataclass
class CliContext:
    config: Config

    @contextlib.asynccontextmanager
    async def router(self, machine: str) -> AsyncIterator[RouterHandle]:
        m = self.config.machine(machine)
        client = client_for_url(m)
        try:
            yield RouterHandle(client)
        finally:
            await client.aclose()
