"""`llamaherd events` prints one line per router event: the list the service re-reads every 30 s of silence is
printed only when it says something the lines so far did not (the real stream: test_router_client)."""

from __future__ import annotations

import json

from app.cli.output import EventLines
from app.services.core.router_types import (
    ModelInfo,
    ModelListEvent,
    ModelsReloadEvent,
    ModelState,
    ModelStatusEvent,
    RouterEvent,
    StreamState,
    StreamStateEvent,
)

U, L = ModelState.UNLOADED, ModelState.LOADED


def listed(**states: ModelState) -> ModelListEvent:
    return ModelListEvent(model="*", models=tuple(ModelInfo(id=k, state=v) for k, v in states.items()))


def printed(events: list[RouterEvent]) -> list[str]:
    lines = EventLines()
    return [json.loads(t)["event"] for ev in events if (t := lines.line(ev)) is not None]


def test_an_identical_re_read_prints_nothing() -> None:
    connected = StreamStateEvent(model="", state=StreamState.CONNECTED)
    assert printed([connected, listed(a=U), listed(a=U), listed(a=U)]) == ["stream_state", "models"]


def test_a_re_read_that_agrees_with_the_status_lines_prints_nothing() -> None:
    evs: list[RouterEvent] = [
        StreamStateEvent(model="", state=StreamState.CONNECTED),
        listed(a=U, b=U),
        ModelStatusEvent(model="a", kind="status_change", status=L),
        listed(a=L, b=U),
    ]
    assert printed(evs) == ["stream_state", "models", "status_change"]


def test_a_re_read_that_differs_is_printed() -> None:
    evs: list[RouterEvent] = [
        StreamStateEvent(model="", state=StreamState.CONNECTED),
        listed(a=U),
        listed(a=L),
        listed(a=L),
    ]
    assert printed(evs) == ["stream_state", "models", "models"]


def test_the_list_after_a_reconnect_or_a_reload_is_always_printed() -> None:
    evs: list[RouterEvent] = [
        StreamStateEvent(model="", state=StreamState.CONNECTED),
        listed(a=U),
        StreamStateEvent(model="", state=StreamState.DISCONNECTED, reason="gone", retry_in=1.0),
        StreamStateEvent(model="", state=StreamState.CONNECTED),
        listed(a=U),
        ModelsReloadEvent(model="*"),
        listed(a=U),
        listed(a=U),
    ]
    assert printed(evs) == ["stream_state", "models", "stream_state", "stream_state", "models", "models_reload",
                            "models"]  # fmt: skip
