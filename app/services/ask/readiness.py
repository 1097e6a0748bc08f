"""Before asking: is the model there to answer, and if not, what asking would cost. A model that is not running is
loaded first only when the operator agrees, told what the load evicts (the fit preview's eviction)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.services.ask.vision import is_projector, vision_of
from app.services.core.errors import HerdError
from app.services.core.router_types import ModelInfo, ModelState
from app.services.fit.capacity import eviction


class NotAskable(HerdError):
    """No model of that name, or a name that is not a model to talk to (a projector)."""


@dataclass(frozen=True)
class Readiness:
    model: str
    """The model's own id (an alias resolved)."""
    state: ModelState
    vision: bool | None
    evicts: str = ""
    """What loading it would unload, in words ("" when it runs or nothing goes)."""

    @property
    def needs_load(self) -> bool:
        return not self.state.running

    @property
    def asleep(self) -> bool:
        return self.state is ModelState.SLEEPING

    def load_question(self, machine: str) -> str:
        """What the operator is asked before a load."""
        then = f"; the load {self.evicts}" if self.evicts else ""
        return f"{self.model} is {self.state.value} on {machine}: asking loads it first{then}."


def readiness(name: str, models: Sequence[ModelInfo], models_max: int | None) -> Readiness:
    m = next((m for m in models if m.id == name), None) or next((m for m in models if name in m.aliases), None)
    if m is None:
        raise NotAskable(f"no model named {name!r} on this router")
    if is_projector(m.id):
        raise NotAskable(f"{m.id} is a projector (mmproj): it is loaded beside a model, not talked to")
    words = ""
    if not m.state.running:
        ev = eviction(m.id, models, models_max)
        if ev.refused:
            words = f"is refused ({ev.note})"
        elif ev.evicts:
            words = f"evicts {', '.join(ev.evicts)}"
        elif ev.candidates:
            words = f"evicts one of {', '.join(ev.candidates)}"
    return Readiness(m.id, m.state, vision_of(m), words)
