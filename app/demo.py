"""`llamaherd demo`: a real local fleet of three llama-server routers with tiny generated models.

The three routers stand in for three machines (a workstation that keeps one model, two GPU boxes that keep more).
They are ordinary managed routers with router keys of their own, so a second `llamaherd demo` adopts them and
`--keep` leaves them for the next run. Nothing is downloaded: the models are written here, in a few seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

import httpx

from app.config import Config, MachineConfig, UiConfig, write_config
from app.services.core.operator_presence import OperatorHands
from app.services.machine.machine import Machine
from app.tinymodels import TinySpec, write_corrupt_model, write_tiny_model


@dataclass(frozen=True)
class DemoModel:
    spec: TinySpec
    corrupt: bool = False


MODELS: tuple[DemoModel, ...] = (
    DemoModel(TinySpec(name="chat-small", n_embd=64, n_layers=2, context_length=512, seed=11)),
    DemoModel(TinySpec(name="chat-medium", n_embd=128, n_layers=4, n_ff=256, context_length=1024, seed=12)),
    DemoModel(TinySpec(name="code-mini", n_embd=96, n_layers=3, n_ff=192, context_length=2048, seed=13)),
    DemoModel(TinySpec(name="notes-nano", n_embd=64, n_layers=1, context_length=256, chat_template=False, seed=14)),
    DemoModel(TinySpec(name="chat-wide", n_embd=192, n_layers=2, n_ff=384, context_length=4096, seed=15)),
    DemoModel(TinySpec(name="broken-q4", seed=16), corrupt=True),
)


@dataclass(frozen=True)
class DemoMachine:
    name: str
    models_max: int
    models: tuple[str, ...]
    on_startup: str | None
    sleep_idle: dict[str, int]


MACHINES: tuple[DemoMachine, ...] = (
    DemoMachine("workstation", 1, ("chat-small", "notes-nano", "code-mini"), "chat-small", {}),
    DemoMachine("gpu-box-a", 2, ("chat-medium", "code-mini", "chat-wide", "broken-q4"), "chat-medium",
                {"code-mini": 20}),
    DemoMachine("gpu-box-b", 3, ("chat-small", "chat-medium", "notes-nano", "chat-wide"), "notes-nano", {}),
)  # fmt: skip


def demo_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "llamaherd" / "demo"


def write_models(root: Path) -> dict[str, Path]:
    """Write each demo model once; an existing file is kept (the weights are seeded, so it is the same file)."""
    out: dict[str, Path] = {}
    for m in MODELS:
        path = root / "models" / f"{m.spec.name}.gguf"
        if not path.exists():
            (write_corrupt_model if m.corrupt else write_tiny_model)(path, m.spec)
        out[m.spec.name] = path
    return out


def preset_for(dm: DemoMachine, files: dict[str, Path]) -> str:
    lines = [
        f"; demo preset for {dm.name}, written by `llamaherd demo`",
        "[*]",
        "parallel = 1",
        "",
    ]
    for name in dm.models:
        lines.append(f"[{name}]")
        lines.append(f"model = {files[name]}")
        if name == dm.on_startup:
            lines.append("load-on-startup = true")
        if name in dm.sleep_idle:
            lines.append(f"sleep-idle-seconds = {dm.sleep_idle[name]}")
        lines.append("")
    return "\n".join(lines)


def prepare(root: Path | None = None) -> Config:
    """Models and presets on disk, and the Config that describes the demo fleet (nothing is started)."""
    root = root or demo_dir()
    files = write_models(root)
    machines = []
    for dm in MACHINES:
        preset = root / "presets" / f"{dm.name}.ini"
        preset.parent.mkdir(parents=True, exist_ok=True)
        if not preset.exists():  # an operator's edits in the demo survive the next run
            preset.write_text(preset_for(dm, files))
        machines.append(
            MachineConfig(
                name=dm.name,
                host="local",
                router=f"demo-{dm.name}",
                models_max=dm.models_max,
                preset=str(preset),
                models_dirs=(str(root / "models"),),
            )
        )
    config = Config(machines=tuple(machines), ui=UiConfig(), path=root / "config.toml")
    # Written so the headless commands work on the demo too: llamaherd --config <demo>/config.toml status
    write_config(config, root / "config.toml")
    return config


async def start_routers(config: Config) -> list[str]:
    """Start (or adopt) every demo router at once; returns the names of those this run started."""

    async def one(cfg: MachineConfig) -> str | None:
        m = Machine(cfg, emit=lambda ev: None)
        try:
            assert m.manager is not None
            _, started = await m.manager.start()
            return cfg.name if started else None
        finally:
            await m.close()

    results = await asyncio.gather(*(one(c) for c in config.machines))
    return [r for r in results if r]


async def stop_routers(config: Config, names: list[str]) -> None:
    async def one(cfg: MachineConfig) -> None:
        m = Machine(cfg, emit=lambda ev: None)
        try:
            assert m.manager is not None
            await m.manager.stop()
        finally:
            await m.close()

    await asyncio.gather(*(one(c) for c in config.machines if c.name in names), return_exceptions=True)


class Traffic:
    """A gentle, repeatable scenario so a recording shows life: loads, unloads, completions, one failure.

    It talks to the routers like any client would (HTTP on loopback), through the demo's own machines. It plays
    beside the operator, not against them: a machine they acted on is left alone for a while (OperatorHands), it
    waits while a screen is open over the dashboard, and the broken model is tried once every BROKEN_EVERY rounds
    (its failure is the same every time).
    """

    BROKEN = "broken-q4"
    BROKEN_EVERY = 5  # rounds of STEPS: at the default period, once every four minutes
    WAIT_STEP = 0.5  # seconds between looks while a screen is open

    STEPS: tuple[tuple[str, str, str], ...] = (
        ("complete", "workstation", "chat-small"),
        ("load", "gpu-box-a", "code-mini"),
        ("complete", "gpu-box-b", "notes-nano"),
        ("load", "gpu-box-b", "chat-small"),
        ("load", "gpu-box-a", "broken-q4"),
        ("complete", "gpu-box-a", "chat-medium"),
        ("load", "workstation", "notes-nano"),
        ("load", "gpu-box-b", "chat-wide"),
        ("complete", "workstation", "notes-nano"),
        ("unload", "gpu-box-b", "chat-small"),
        ("load", "workstation", "chat-small"),
        ("unload", "gpu-box-a", "code-mini"),
    )

    def __init__(self, config: Config, period: float = 4.0, hands: OperatorHands | None = None) -> None:
        self.config = config
        self.period = period
        self.hands = hands or OperatorHands()

    def choose(self, step: int) -> tuple[str, str, str] | None:
        """The scenario's step number `step`, or None where it is left out now."""
        action, machine, model = self.STEPS[step % len(self.STEPS)]
        if model == self.BROKEN and (step // len(self.STEPS)) % self.BROKEN_EVERY:
            return None
        if self.hands.hands_off(machine):
            return None
        return action, machine, model

    async def _url(self, cfg: MachineConfig) -> tuple[str, dict[str, str]] | None:
        """The router's URL and the headers a client sends it (its API key, read like any adopter reads it)."""
        m = Machine(cfg, emit=lambda ev: None)
        try:
            assert m.manager is not None
            rec = await m.manager.adopt()
            if rec is None:
                return None
            key = await m.manager.client_key(rec)
            return f"http://127.0.0.1:{rec.port}", {"Authorization": f"Bearer {key}"} if key else {}
        finally:
            await m.close()

    async def run(self) -> None:
        urls = {c.name: await self._url(c) for c in self.config.machines}
        async with httpx.AsyncClient(timeout=30) as http:
            step = 0
            while True:
                if self.hands.screen_open:  # set from the dashboard's thread: looked at, not awaited
                    await asyncio.sleep(self.WAIT_STEP)
                    continue
                chosen = self.choose(step)
                step += 1
                where = urls.get(chosen[1]) if chosen else None
                if chosen and where:
                    with contextlib.suppress(httpx.HTTPError):
                        await self._do(http, where, chosen[0], chosen[2])
                await asyncio.sleep(self.period)

    async def _do(self, http: httpx.AsyncClient, where: tuple[str, dict[str, str]], action: str, model: str) -> None:
        url, headers = where
        if action == "load":
            await http.post(f"{url}/models/load", json={"model": model}, headers=headers)
        elif action == "unload":
            await http.post(f"{url}/models/unload", json={"model": model}, headers=headers)
        else:
            await http.post(
                f"{url}/completion",
                json={"model": model, "prompt": "Hello from the llamaherd demo.", "n_predict": 24, "seed": 1},
                headers=headers,
            )


async def prepare_and_start(root: Path | None = None) -> tuple[Config, list[str]]:
    config = prepare(root)
    return config, await start_routers(config)
