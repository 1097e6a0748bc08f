"""A model's failure toast leads to its history: the toast names the key, and that key opens the history filtered
to the failed model for a while after (the filter is shown in the screen's input, and cleared there)."""

from __future__ import annotations

from dataclasses import dataclass

LINKED_FOR = 120.0  # seconds after a failure during which `h` opens its model's history


@dataclass
class FailureLink:
    machine: str = ""
    model: str = ""
    at: float = float("-inf")

    def note(self, machine: str, model: str, now: float) -> None:
        self.machine, self.model, self.at = machine, model, now

    def query(self, now: float) -> str:
        """The history filter for the last failure, or "" when there was none lately."""
        if not self.model or now - self.at > LINKED_FOR:
            return ""
        return f"machine={self.machine} model={self.model}"


def with_history_key(text: str, key: str) -> str:
    return f"{text} · {key} for its history"
