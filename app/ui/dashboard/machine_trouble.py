"""What is wrong with a machine, in the words the title counts and the order "problems first" sorts by.

Worst first: a machine that cannot be reached says nothing else; a router that exited or stopped answering serves
nothing; failed models are one machine's trouble among working ones. A machine with none of these has no trouble.
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
FAILED_MODELS = "failed"

ORDER = (UNREACHABLE, ROUTER_EXITED, ROUTER_NOT_ANSWERING, FAILED_MODELS)
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
    if failed_count(st):
        found.append(FAILED_MODELS)
    return tuple(found)


def failed_count(st: MachineState) -> int:
    return sum(1 for m in st.by_id.values() if m.failed or m.state is ModelState.FAILED)


def trouble_rank(st: MachineState) -> int:
    """0 for the worst kind, len(ORDER) for a machine without trouble."""
    kinds = troubles(st)
    return ORDER.index(kinds[0]) if kinds else len(ORDER)


def trouble_counts(states: Iterable[MachineState]) -> list[tuple[str, int]]:
    """(kind, machines with it), worst first, only the kinds some machine has; failed counts models, not machines."""
    machines: Counter[str] = Counter()
    failed = 0
    for st in states:
        for kind in troubles(st):
            machines[kind] += 1
        failed += failed_count(st) if st.view.connection is not Connection.UNREACHABLE else 0
    out = [(k, machines[k]) for k in ORDER if k != FAILED_MODELS and machines[k]]
    if failed:
        out.append((FAILED_MODELS, failed))
    return out


def problems_first(states: Iterable[MachineState]) -> list[str]:
    """Machine names, the worst trouble first; among equals the configured order is kept (a stable sort)."""
    return [st.view.name for st in sorted(states, key=trouble_rank)]
