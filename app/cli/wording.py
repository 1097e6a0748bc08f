"""How the command line words a typed failure: in its own terms (commands, flags) where the service's words stop."""

from __future__ import annotations

from app.services.core.errors import HerdError, RouterNotRunning


def say(e: HerdError) -> str:
    if isinstance(e, RouterNotRunning):
        return f"{e}; start it with `llamaherd start {e.machine}`"
    return str(e)
