"""Truthful liveness: a router whose process is there but which does not answer is shown as not answering.

A SIGSTOPped router keeps its pid, its start time and its listening socket (the kernel still accepts
connections), so every check of "is the process there?" said running while nothing answered.
"""

from __future__ import annotations

from app.services.core.router_types import RouterState

_UP = (RouterState.RUNNING, RouterState.ATTACHED)


def shown_state(told: RouterState, answering: bool) -> RouterState:
    """The state to show: what the process checks said, unless it is up and its router does not answer."""
    return RouterState.NOT_ANSWERING if told in _UP and not answering else told
