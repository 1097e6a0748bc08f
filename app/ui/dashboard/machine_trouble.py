"""What is wrong with a machine, in the words the title counts and the order "problems first" sorts by.

Worst first: a machine that cannot be reached says nothing else; a router that exited or stopped answering serves
nothing; loaded models that stopped answering (issue 35) and failed models are one machine's trouble among working
ones. A machine with none of these has no trouble.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from app.services.core.host_types import Connection
from app.services.core.router_types import ModelState, RouterState
from app.ui.state.herd_state import MachineState

UNREACHABLE = "unreachable"
ROUTER_EXITED = "router exited"
ROUTER_NOT_ANSWERING = "router not answering"
MODELS_NOT_ANSWERING = "not answering"
FAILED_MODELS = "failed"

ORDER = (UNREACHABLE, ROUTER_EXITED, ROUTER_NOT_ANSWERING, MODELS_NOT_ANSWERING, FAILED_MODELS)
MODEL_KINDS = (MODELS_NOT_ANSWERING, FAILED_MODELS)
"""Kinds counted in models, not machines (the title's "2 not answering" are two models)."""
"""The kinds, worst first: the title counts them in this order, and "problems first" sorts by it."""


def troubles(st: MachineState) -> tuple[str, ...]:
    """The kinds of trouble a machine has now, worst first (empty: none)."""
    v = st.view
    if v.connection is Connection.UNREACHABLE or v.router_state is RouterState.UNREACHABLE:
        return (UNREACHABLE,)
    found: list[str] = []
    if v.router_state is RouterState.EXITED:
        found.append(ROUTER_EXITED)
    elif v.router_state is RouterState.NOT_ANSWERING:
        found.append(ROUTER_NOT_ANSWERING)
    if not_answering_count(st):
        found.append(MODELS_NOT_ANSWERING)
    if failed_count(st):
        found.append(FAILED_MODELS)
    return tuple(found)


def failed_count(st: MachineState) -> int:
    return sum(1 for m in st.by_id.values() if m.failed or m.state is ModelState.FAILED)


def not_answering_count(st: MachineState) -> int:
    """Loaded models whose children stopped answering (a router that is not answering is its own kind)."""
    return len(st.not_answering) if st.view.router_state is not RouterState.NOT_ANSWERING else 0


def trouble_rank(st: MachineState) -> int:
    """0 for the worst kind, len(ORDER) for a machine without trouble."""
    kinds = troubles(st)
    return ORDER.index(kinds[0]) if kinds else len(ORDER)


def trouble_counts(states: Iterable[MachineState]) -> list[tuple[str, int]]:
    """(kind, how many), worst first, only the kinds some machine has: machines, but models for MODEL_KINDS."""
    machines: Counter[str] = Counter()
    models: Counter[str] = Counter()
    for st in states:
        for kind in troubles(st):
            machines[kind] += 1
        if st.view.connection is not Connection.UNREACHABLE:
            models[MODELS_NOT_ANSWERING] += not_answering_count(st)
            models[FAILED_MODELS] += failed_count(st)
    counts = {k: models[k] if k in MODEL_KINDS else machines[k] for k in ORDER}
    return [(k, n) for k, n in counts.items() if n]


def problems_first(states: Iterable[MachineState]) -> list[str]:
    """Machine names, the worst trouble first; among equals the configured order is kept (a stable sort)."""
    return [st.view.name for st in sorted(states, key=trouble_rank)]
