"""Acting on every marked row at once (space marks, k9s-style): one question naming everything it will do, then each
target done and its outcome told on its own (FleetActions reports every call).

Rows the action does not apply to are named as skipped in the question (a load of a model already running), so the
operator sees the whole of it before saying yes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.text import Text

from app.services.core.textsafe import visible
from app.ui.state.herd_state import HerdState
from app.ui.text.format import DIM

VERBS = ("load", "unload", "stop")


@dataclass(frozen=True)
class BulkPlan:
    verb: str
    todo: tuple[tuple[str, str], ...]
    """(machine, model) for load and unload; (machine, "") per router for stop."""
    skipped: tuple[tuple[str, str, str], ...]
    """(machine, model, why) of the marked rows it does not apply to."""


def plan(verb: str, marked: Sequence[tuple[str, str]], state: HerdState) -> BulkPlan:
    todo: list[tuple[str, str]] = []
    skipped: list[tuple[str, str, str]] = []
    if verb == "stop":
        for machine in dict.fromkeys(m for m, _ in marked):
            todo.append((machine, ""))
        return BulkPlan(verb, tuple(todo), ())
    for machine, model in marked:
        info = state.get(machine).by_id.get(model)
        if info is None:
            skipped.append((machine, model, "no longer listed"))
        elif verb == "load" and info.state.running:
            skipped.append((machine, model, f"already {info.state.value}"))
        elif verb == "unload" and not info.state.running:
            skipped.append((machine, model, f"not running ({info.state.value})"))
        else:
            todo.append((machine, model))
    return BulkPlan(verb, tuple(todo), tuple(skipped))


def question(p: BulkPlan, state: HerdState, fit_line: Callable[[str, str], str]) -> Text:
    """Every target, one line each (a load with what its fit preview says), then the skipped ones."""
    body = Text()
    for machine, model in p.todo:
        if body:
            body.append("\n")  # between lines, not inside a name: visible() would show a newline as ␊
        if p.verb == "stop":
            running = state.get(machine).running_models()
            gone = f" (unloads {', '.join(running)})" if running else ""
            body.append(visible(f"stop the router on {machine}{gone}"))
        elif p.verb == "load":
            body.append(visible(f"load {model} on {machine}"), style="bold")
            body.append(visible(f"  {fit_line(machine, model)}"), style=DIM)
        else:
            body.append(visible(f"unload {model} on {machine}"), style="bold")
    for machine, model, why in p.skipped:
        body.append("\n")
        body.append(visible(f"skipped: {model} on {machine}: {why}"), style=DIM)
    return body
