"""One streamed chat-completion chunk (`data: {...}` of `POST /v1/chat/completions` with `"stream": true`) read
into what it carries: a piece of the reply, why it finished, and the server's own counts and timings.

What this llama-server sends (measured, build 11434): a first chunk with `delta.role` and `content: null`, one
chunk per token with `delta.content`, one with `finish_reason` ("length" / "stop") and an empty delta, then (asked
with `stream_options.include_usage`) one with `choices: []`, `usage` {prompt_tokens, completion_tokens, ...} and
`timings` {prompt_n, prompt_ms, predicted_n, predicted_ms, predicted_per_second, ...}, then `data: [DONE]`.

Pure and hostile-input safe: anything not of the expected shape is ignored, never raised.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

DONE = "[DONE]"


@dataclass(frozen=True)
class ChunkFacts:
    text: str = ""
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    prompt_ms: float | None = None
    predicted_per_second: float | None = None
    error: str | None = None
    """An error the server sent inside the stream ({"error": {...}}), in its words."""


def read_chunk(payload: str) -> ChunkFacts:
    try:
        body = json.loads(payload)
    except (json.JSONDecodeError, RecursionError):
        return ChunkFacts()
    if not isinstance(body, dict):
        return ChunkFacts()
    err = body.get("error")
    if err is not None:
        msg = err.get("message") if isinstance(err, dict) else err
        return ChunkFacts(error=str(msg)[:500])
    text, finish = "", None
    choices = body.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        delta = choices[0].get("delta")
        if isinstance(delta, dict) and isinstance(delta.get("content"), str):
            text = delta["content"]
        if isinstance(choices[0].get("finish_reason"), str):
            finish = choices[0]["finish_reason"][:40]
    usage: dict[str, Any] = u if isinstance(u := body.get("usage"), dict) else {}
    timings: dict[str, Any] = t if isinstance(t := body.get("timings"), dict) else {}
    return ChunkFacts(
        text=text,
        finish_reason=finish,
        prompt_tokens=_count(usage.get("prompt_tokens"), timings.get("prompt_n")),
        completion_tokens=_count(usage.get("completion_tokens"), timings.get("predicted_n")),
        prompt_ms=_number(timings.get("prompt_ms")),
        predicted_per_second=_number(timings.get("predicted_per_second")),
    )


def _count(*values: Any) -> int | None:
    for v in values:
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
            return v
    return None


def _number(v: Any) -> float | None:
    if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v >= 0:
        return float(v)
    return None
