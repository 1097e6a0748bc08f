"""Parsing the router's JSON: real shapes become typed values; garbage is reported as garbage."""

from __future__ import annotations

import pytest

from app.services.core.errors import BadAnswer
from app.services.core.router_types import ModelState, ModelStatusEvent, UnknownEvent
from app.services.router.parse import error_message, parse_event, parse_models


def test_failed_model_is_unloaded_with_exit_code() -> None:
    body = {
        "data": [
            {
                "id": "m",
                "status": {"value": "unloaded", "args": ["x", "--port", "4242"], "exit_code": 1, "failed": True},
            }
        ]
    }
    (m,) = parse_models(body)
    assert m.state is ModelState.FAILED and m.exit_code == 1 and m.port == 4242


def test_port_zero_before_first_load_means_none() -> None:
    (m,) = parse_models({"data": [{"id": "m", "status": {"value": "unloaded", "args": ["--port", "0"]}}]})
    assert m.port is None and m.state is ModelState.UNLOADED


@pytest.mark.parametrize("body", [[], {"data": {}}, {"data": [{"status": {}}]}, {"data": [{"id": "m"}]}, "x"])
def test_wrong_shapes_are_bad_answers(body: object) -> None:
    with pytest.raises(BadAnswer) as e:
        parse_models(body)
    assert "GET /models" in str(e.value)


def test_event_with_progress() -> None:
    ev = parse_event(
        '{"model":"m","event":"status_change","data":{"status":"loading",'
        '"progress":{"stages":["text_model"],"current":"text_model","value":0.5}}}'
    )
    assert isinstance(ev, ModelStatusEvent) and ev.progress is not None and ev.progress.value == 0.5


def test_garbage_event() -> None:
    ev = parse_event("this is not json")
    assert isinstance(ev, UnknownEvent) and ev.kind == "invalid" and ev.data["raw"] == "this is not json"


def test_error_message_prefers_the_routers_words() -> None:
    assert error_message('{"error":{"message":"model is already running","code":400}}') == "model is already running"
    assert error_message("proxy error: connection refused") == "proxy error: connection refused"
