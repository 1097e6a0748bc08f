"""Saying once that a machine became unreachable: a notification when it goes, none on each retry after.

The card keeps the reason in view (in full on the selected card); the notification is what catches the eye when
it happens. A machine says it again only after it came back (connected) and went again: a retry that passes
through "connecting" and fails again is the same outage.
"""

from __future__ import annotations

from app.services.core.fleet_events import MachineView
from app.services.core.host_types import Connection
from app.services.core.textsafe import visible

REASON_CHARS = 400  # a reason longer than this (a remote's stderr) is cut in the toast; the card wraps the rest


class UnreachableNotices:
    def __init__(self) -> None:
        self._said: set[str] = set()
        """Machines whose current outage was said already."""

    def seen(self, view: MachineView) -> str | None:
        """The sentence to say when `view` is a machine that has just become unreachable; None otherwise."""
        name = view.name
        if view.connection in (Connection.CONNECTED, Connection.LOCAL):
            self._said.discard(name)  # back: its next outage is news again
            return None
        if view.connection is not Connection.UNREACHABLE or name in self._said:
            return None
        self._said.add(name)
        return unreachable_sentence(view)


def unreachable_sentence(view: MachineView) -> str:
    """The sentence "gpu-box is unreachable: <reason>": one line, control characters shown, bounded."""
    reason = visible(" ".join(view.connection_reason.split())) or "no answer"
    if len(reason) > REASON_CHARS:
        reason = reason[: REASON_CHARS - 3] + "..."  # plain dots: ASCII terminals too
    return f"{visible(view.name)} is unreachable: {reason}"
