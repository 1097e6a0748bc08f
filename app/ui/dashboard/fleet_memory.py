"""The fleet view's memory column: each running model's child RSS (and GPU memory), read while the view is shown.

Every MEMORY_EVERY seconds, one worker asks each machine with a running model (one command per machine, all at
once: Fleet.model_memory); the rows whose cell text changed are redrawn. Hidden, the view asks nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from app.services.core.errors import HerdError
from app.services.hosts.child_memory import ModelMemory
from app.ui.state.fleet_protocol import FleetApi
from app.ui.state.herd_state import HerdState
from app.ui.text.format import DIM, human_bytes, is_down
from app.ui.widgets.table_rows import CellSpec, shared

MEMORY_EVERY = 5.0
NO_MEMORY = CellSpec("", "", -1)


def memory_cell(mem: ModelMemory | None) -> CellSpec:
    """RSS, plus GPU memory where nvidia-smi lists some; "?" when not known (an attached router); "" not running."""
    if mem is None:
        return NO_MEMORY
    if mem.rss is None:
        return shared(CellSpec("?", DIM, -1))
    text = human_bytes(mem.rss) + (f" +{human_bytes(mem.gpu)} GPU" if mem.gpu else "")
    return CellSpec(text, "", mem.rss + (mem.gpu or 0))


async def read_memory(fleet: FleetApi, state: HerdState) -> dict[str, Mapping[str, ModelMemory]]:
    """Machine -> its running models' memory, for each machine up with a running model (others: absent)."""
    names = [n for n in state.names if not is_down(state.get(n).view) and state.get(n).running_count()]
    got = await asyncio.gather(*(fleet.model_memory(n) for n in names), return_exceptions=True)
    out: dict[str, Mapping[str, ModelMemory]] = {}
    for name, mems in zip(names, got, strict=True):
        if isinstance(mems, HerdError):
            continue  # a machine that cannot be measured now: its cells stay empty, the next round asks again
        if isinstance(mems, BaseException):
            raise mems
        out[name] = mems
    return out


def changed(
    old: Mapping[str, Mapping[str, ModelMemory]], new: Mapping[str, Mapping[str, ModelMemory]]
) -> list[tuple[str, str]]:
    """(machine, model) whose memory cell reads differently now."""
    out: list[tuple[str, str]] = []
    for machine in old.keys() | new.keys():
        a, b = old.get(machine, {}), new.get(machine, {})
        out += [(machine, k) for k in a.keys() | b.keys() if memory_cell(a.get(k)) != memory_cell(b.get(k))]
    return out
