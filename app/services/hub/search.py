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
from app.services.core.router_types import ModelInfo
from app.services.fit.capacity import Capacity, capacity
from app.services.hub.hub_api import HubClient, HubError, RepoHit
from app.services.hub.hub_fit import FileFit, file_fit
from app.services.hub.repo_files import RepoListing, group
from app.services.machine.machine import Machine

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


async def _machine_side(m: Machine) -> tuple[Capacity, list[ModelInfo], int | None, str]:
    """The machine's memory and its router's models; a router that is not running only loses the eviction."""
    await m.transport.connect()
    cap = capacity(await m.transport.host_stats())
    try:
        client = await m.router_client()
        models = await client.models()
        models_max = (await client.props()).max_instances
    except HerdError as e:
        return cap, [], None, f"router: {e}"
    return cap, models, models_max, ""


async def repo_choices(m: Machine, repo: str) -> RepoChoices:
    """The repo's quants (from the hub, asked from here) with a verdict for machine `m` each."""
    async with hub_client(m.cfg) as hub:
        listing = group(repo, await hub.files(repo))
        try:
            async with asyncio.timeout(MACHINE_TIMEOUT):
                cap, models, models_max, note = await _machine_side(m)
        except (HerdError, OSError, TimeoutError) as e:
            return RepoChoices(listing, {}, f"no verdicts: {m.name} could not be asked ({e or 'no answer'})")
        projector = listing.vision[-1] if listing.vision else None
        gate = asyncio.Semaphore(PARALLEL_HEADERS)

        async def one(q_index: int) -> FileFit:
            async with gate:
                return await file_fit(hub, repo, listing.quants[q_index], projector, cap, models, models_max)

        fits = await asyncio.gather(*(one(i) for i in range(len(listing.quants))))
        return RepoChoices(listing, {f.quant: f for f in fits}, note)
