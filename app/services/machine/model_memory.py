"""Each running model's memory on one machine (hosts/child_memory.py), or why it is not known.

Only a router llamaherd runs (or adopted from its record) has a process llamaherd knows: an attached router is a
URL, possibly on another host, so its children are nobody's to look at from here.
"""

from __future__ import annotations

from collections.abc import Iterable

from app.services.core.errors import TransportError
from app.services.core.router_types import ModelInfo, RouterState
from app.services.hosts.child_memory import ChildProbe, ModelMemory, children_argv, memory_of, parse_children
from app.services.hosts.transport import Transport
from app.services.machine.machine import Machine

PROBE_TIMEOUT = 10.0
ATTACHED = "attached router: its processes are not llamaherd's to see (it may run on another host)"
NOT_RUNNING = "its router is not running"


async def probe_children(transport: Transport, router_pid: int) -> ChildProbe:
    """One command on the machine: the router's children and the GPU memory per process."""
    res = await transport.run(children_argv(router_pid), timeout=PROBE_TIMEOUT)
    if not res.ok:
        first = res.stderr.decode(errors="replace").strip().splitlines()[:1]
        cause = first[0][:200] if first else f"exit code {res.returncode}"
        raise TransportError(f"{transport.name}: reading its processes failed: {cause}")
    return parse_children(res.stdout)


def running_of(models: Iterable[ModelInfo]) -> list[tuple[str, int | None]]:
    """(id, port) of each model with a child process (loading, loaded, sleeping)."""
    return [(m.id, m.port) for m in models if m.state.running]


def unknown(running: Iterable[tuple[str, int | None]], why: str) -> dict[str, ModelMemory]:
    return {mid: ModelMemory(why=why) for mid, _ in running}


async def model_memory(machine: Machine) -> dict[str, ModelMemory]:
    """Running model id -> its memory (one command on the machine for all of them). A model not running is absent."""
    v = machine.view
    running = running_of(machine.models.values())
    if not running:
        return {}
    if not v.managed:
        return unknown(running, ATTACHED)
    if v.router_state is not RouterState.RUNNING or v.pid is None:
        return unknown(running, NOT_RUNNING)
    return memory_of(await probe_children(machine.transport, v.pid), running)
