"""What every command needs: the config, and a way to reach a machine's router."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.config import Config
from app.errors import ConfigError

if TYPE_CHECKING:  # imported when a machine is reached: `llamaherd history` often reaches none
    from app.services.lifecycle.manager import RouterManager
    from app.services.machine.machine import Machine
    from app.services.router.client import RouterClient


@dataclass
class RouterHandle:
    client: RouterClient
    machine: Machine

    async def model_log_tail(self, model: str) -> list[str]:
        return await self.machine.model_log_tail(model)


@dataclass
class CliContext:
    config: Config

    @contextlib.asynccontextmanager
    async def machine(self, name: str) -> AsyncIterator[Machine]:
        from app.services.machine.machine import Machine

        m = Machine(self.config.machine(name), emit=lambda ev: None)
        try:
            yield m
        finally:
            await m.close()

    @contextlib.asynccontextmanager
    async def managed(self, name: str, refusal: str) -> AsyncIterator[tuple[Machine, RouterManager]]:
        """A connected machine whose router llamaherd manages; an attach-only one is a usage error (exit 2)."""
        async with self.machine(name) as m:
            if m.manager is None:
                raise ConfigError(f"{m.name} is attach-only (url = {m.cfg.url}): {refusal}")
            m.manager.ask_early()  # its first look rides along with the agent's start (over ssh)
            await m.transport.connect()
            yield m, m.manager

    @contextlib.asynccontextmanager
    async def router(self, name: str) -> AsyncIterator[RouterHandle]:
        async with self.machine(name) as m:
            yield RouterHandle(await m.connect_router(), m)
