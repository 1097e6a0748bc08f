"""Search a machine's hub from here: repos for a query, and for one repo its GGUF files by quant with a fit verdict
for that machine each. The hub is asked from where llamaherd runs; one reachable only from the serving machine
is said so, and a repo typed by name can still be pulled (the router's download child asks it from there).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field

from app.config import MachineConfig
from app.services.core.errors import HerdError
from app.services.core.host_types import HostStats
from app.services.core.router_types import ModelInfo
from app.services.fit.capacity import Capacity, capacity
from app.services.hub.hub_api import HubClient, HubError, RepoHit
from app.services.hub.hub_fit import FileFit, file_fit, section_args
from app.services.hub.repo_files import RepoListing, group
from app.services.machine.machine import Machine
from app.services.presets.store import PresetStore

# The machine's side of a verdict (memory, the router's list) is asked within this; past it, verdicts are unknown.
MACHINE_TIMEOUT = 20.0
# Header reads at once against the hub.
PARALLEL_HEADERS = 4


def hub_client(cfg: MachineConfig) -> HubClient:
    token = os.environ.get(cfg.hub_token_env) if cfg.hub_token_env else None
    return HubClient(cfg.hub, token or None)


def unreachable_hint(cfg: MachineConfig, err: HubError) -> str:
    """The failure, and what still works when the hub is reachable only from the serving machine."""
    if "cannot be reached from here" not in str(err):
        return str(err)
    return (
        f"{err}; if {cfg.hub} is reachable only from {cfg.name}, pull by name: "
        f"`llamaherd pull {cfg.name} OWNER/REPO:QUANT`"
    )


async def search_repos(cfg: MachineConfig, query: str) -> list[RepoHit]:
    async with hub_client(cfg) as hub:
        return await hub.search(query)


@dataclass(frozen=True)
class RepoChoices:
    listing: RepoListing
    fits: dict[str, FileFit] = field(default_factory=dict)
    note: str = ""  # why verdicts are missing or partial ("" when every quant has one)


@dataclass(frozen=True)
class _MachineSide:
    cap: Capacity
    models: list[ModelInfo]
    models_max: int | None
    preset_args: tuple[str, ...]  # the preset's [*] as arguments (what a new cache model gets)
    note: str


async def _preset_args(m: Machine) -> tuple[str, ...]:
    """The `[*]` section of the preset llamaherd starts this machine's router with (none for an attached router, or
    when the file cannot be read: the verdict then takes llama-server's defaults)."""
    if m.cfg.url is not None:
        return ()
    try:
        snap = await PresetStore(m).read()
    except (HerdError, OSError):
        return ()
    return section_args(snap.doc.sections().get("*", {})) if snap.exists else ()


async def _machine_side(m: Machine, host: HostStats | None) -> _MachineSide:
    """The machine's memory, its router's models and its preset's `[*]`; a router that is not running only loses
    the eviction."""
    await m.transport.connect()
    cap = capacity(host or await m.transport.host_stats())
    preset_args = await _preset_args(m)
    try:
        client = await m.router_client()
        models = await client.models()
        models_max = (await client.props()).max_instances
    except HerdError as e:
        return _MachineSide(cap, [], None, preset_args, f"router: {e}")
    return _MachineSide(cap, models, models_max, preset_args, "")


async def repo_choices(m: Machine, repo: str, host: HostStats | None = None) -> RepoChoices:
    """The repo's quants (from the hub, asked from here) with a verdict for machine `m` each. `host`: memory
    figures to judge by instead of the machine's own (the README's screenshots: fixed ones)."""
    async with hub_client(m.cfg) as hub:
        listing = group(repo, await hub.files(repo))
        try:
            async with asyncio.timeout(MACHINE_TIMEOUT):
                side = await _machine_side(m, host)
        except (HerdError, OSError, TimeoutError) as e:
            return RepoChoices(listing, {}, f"no verdicts: {m.name} could not be asked ({e or 'no answer'})")
        projector = listing.vision[-1] if listing.vision else None
        gate = asyncio.Semaphore(PARALLEL_HEADERS)

        async def one(q_index: int) -> FileFit:
            async with gate:
                q = listing.quants[q_index]
                return await file_fit(hub, repo, q, projector, side.cap, side.models, side.models_max, side.preset_args)

        fits = await asyncio.gather(*(one(i) for i in range(len(listing.quants))))
        return RepoChoices(listing, {f.quant: f for f in fits}, side.note)
