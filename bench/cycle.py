"""A realistic router cycle for the long benches: loads, completions, unloads, a failing model, preset reloads and
router restarts, driven through the service layer against a real managed local router.

One step every `period` seconds: load alpha, a completion on it, unload it; every 5th step the corrupt model is
loaded (and fails), every 10th the preset is reloaded, every `restart_every`th (50; 0: never) the router is stopped
and started again.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from app.config import Config, MachineConfig
from app.services.core.errors import HerdError
from app.services.machine.machine import Machine
from app.services.router.client import RouterClient
from bench.common import tiny_models, workdir
from tests.helpers.router import preset_text

NAME = "soak"


def managed_config(d: Path | None = None) -> tuple[Config, Path]:
    """A one-machine config with a managed local router over the tiny models; XDG_STATE_HOME points into `d`."""
    d = d or workdir()
    models = tiny_models(d)
    preset = d / "soak.ini"
    preset.write_text(preset_text({"alpha": models["alpha"], "beta": models["beta"], "broken": models["broken"]}))
    os.environ["XDG_STATE_HOME"] = str(d / "state")
    cfg = Config(machines=(MachineConfig(name=NAME, preset=str(preset), models_dirs=(str(d),)),))
    return cfg, d


@dataclass
class Cycle:
    config: Config
    period: float = 3.0
    restart_every: int = 50  # 0: never (a soak without restarts tells what a restart costs)
    steps: int = 0
    failures: list[str] = field(default_factory=list)

    def _machine(self) -> Machine:
        return Machine(self.config.machines[0], emit=lambda ev: None)

    async def start(self) -> None:
        m = self._machine()
        try:
            assert m.manager is not None
            await m.manager.start()
        finally:
            await m.close()

    async def stop(self) -> None:
        m = self._machine()
        try:
            assert m.manager is not None
            await m.manager.stop()
        finally:
            await m.close()

    async def _client(self) -> RouterClient:
        # The machine owns the client it hands out (closing the machine closes it): a client of our own instead.
        m = self._machine()
        try:
            assert m.manager is not None
            c = await m.connect_router()
            # The router's own key (made on its first start): the config's api_key_env is unset here.
            key = await m.manager.client_key((await m.manager.inspect()).record)
            return RouterClient(c.base_url, api_key=key)
        finally:
            await m.close()

    async def run(self) -> None:
        client: RouterClient | None = None
        while True:
            self.steps += 1
            try:
                if client is None:
                    client = await self._client()
                if await self._step(client):
                    client = None  # closed by the restart: the next step asks for the new router's
            except (HerdError, OSError) as e:
                self.failures.append(f"step {self.steps}: {e}")
                if client is not None:
                    await client.aclose()
                client = None
            await asyncio.sleep(self.period)

    async def _step(self, client: RouterClient) -> bool:
        """One step of the cycle; True when it restarted the router (and closed `client`)."""
        n = self.steps
        if self.restart_every > 0 and n % self.restart_every == 0:
            await client.aclose()
            await self.stop()
            await self.start()
            return True
        if n % 10 == 0:
            await client.reload()
            return False
        if n % 5 == 0:
            await client.load("broken")
            return False
        await client.load("alpha")
        for _ in range(100):  # wait until loaded (a tiny model takes ~50 ms)
            if any(m.id == "alpha" and m.state.running for m in await client.models()):
                break
            await asyncio.sleep(0.05)
        with contextlib.suppress(HerdError):
            await client._request(
                "POST", "/completion", json={"model": "alpha", "prompt": "Hello", "n_predict": 16, "seed": 1}
            )
        await client.unload("alpha")
        return False
