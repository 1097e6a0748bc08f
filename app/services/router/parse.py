"""Turn the router's JSON into typed values, or say exactly what was wrong with it.

Shapes are those of llama-server router mode (see shared/reference/llama-server-router.md §2.3, §2.6).
"""

from __future__ import annotations

import json
from typing import Any

from app.services.core.errors import BadAnswer
from app.services.core.router_types import (
    DownloadProgressEvent,
    DownloadResultEvent,
    LoadProgress,
    ModelInfo,
    ModelProps,
    ModelRemovedEvent,
    ModelsReloadEvent,
    ModelState,
    ModelStatusEvent,
    RouterEvent,
    RouterProps,
    UnknownEvent,
)


def _short(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value)[:limit]
    return text if len(text) <= limit else text[:limit] + "…"


def state_of(value: Any, exit_code: Any = None) -> ModelState:
    try:
        state = ModelState(value)
    except ValueError:
        return ModelState.UNKNOWN
    if state is ModelState.UNLOADED and isinstance(exit_code, int) and exit_code != 0:
        return ModelState.FAILED
    return state


def _obj(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _int_or_none(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _strs(v: Any, same: dict[Any, Any] | None = None) -> tuple[str, ...]:
    """The strings of a list; with `same`, each string and each such list once per reply (see parse_models)."""
    if not isinstance(v, list):
        return ()
    if same is None:
        return tuple(x for x in v if isinstance(x, str))
    strs = tuple(same.setdefault(x, x) for x in v if isinstance(x, str))
    return same.setdefault(strs, strs)  # type: ignore[no-any-return]


def parse_progress(v: Any) -> LoadProgress | None:
    if not isinstance(v, dict):
        return None
    value = v.get("value")
    return LoadProgress(
        stages=_strs(v.get("stages")),
        current=str(v.get("current", "")),
        value=float(value) if isinstance(value, int | float) else 0.0,
    )


def parse_model(entry: Any, where: str = "GET /models", same: dict[Any, Any] | None = None) -> ModelInfo:
    if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
        raise BadAnswer(f"{where}: expected a model object with an 'id', got {_short(entry)}")
    status = entry.get("status")
    if not isinstance(status, dict) or "value" not in status:
        raise BadAnswer(f"{where}: model {entry['id']!r} has no status.value: {_short(entry)}")
    exit_code = _int_or_none(status.get("exit_code"))
    meta = _obj(entry.get("meta"))
    arch = _obj(entry.get("architecture"))
    return ModelInfo(
        id=entry["id"],
        state=state_of(status.get("value"), exit_code),
        aliases=_strs(entry.get("aliases")),
        tags=_strs(entry.get("tags")),
        args=_strs(status.get("args"), same),
        preset=str(status.get("preset", "")),
        exit_code=exit_code,
        failed=bool(status.get("failed", False)),
        input_modalities=_strs(arch.get("input_modalities"), same) or ("text",),
        source=_one(str(entry.get("source", "")), same),
        can_remove=bool(entry.get("can_remove", False)),
        n_ctx=_int_or_none(meta.get("n_ctx")),
        n_params=_int_or_none(meta.get("n_params")),
        size=_int_or_none(meta.get("size")),
    )


def parse_models(body: Any) -> list[ModelInfo]:
    if not isinstance(body, dict) or not isinstance(body.get("data"), list):
        raise BadAnswer(f'GET /models: expected {{"data": [...]}}, got {_short(body)}')
    # Models share most of their arguments (flags, a models directory, often a file): JSON gives each its own copy
    # of every string, and at 20,000 models those copies were ~20 MB. Each distinct string is kept once per reply.
    same: dict[Any, Any] = {}
    return [parse_model(e, same=same) for e in body["data"]]


def _one(text: str, same: dict[Any, Any] | None) -> str:
    return text if same is None else same.setdefault(text, text)


def parse_router_props(body: Any) -> RouterProps:
    if not isinstance(body, dict):
        raise BadAnswer(f"GET /props: expected an object, got {_short(body)}")
    autoload = body.get("models_autoload")
    return RouterProps(
        role=str(body.get("role", "")),
        max_instances=_int_or_none(body.get("max_instances")),
        models_autoload=autoload if isinstance(autoload, bool) else None,
        build_info=str(body.get("build_info", "")),
        raw=body,
    )


def parse_model_props(model: str, body: Any) -> ModelProps:
    if not isinstance(body, dict):
        raise BadAnswer(f"GET /props?model={model}: expected an object, got {_short(body)}")
    mods = _obj(body.get("modalities"))
    dgs = body.get("default_generation_settings")
    n_ctx = _int_or_none(dgs.get("n_ctx")) if isinstance(dgs, dict) else None

    def tri(v: Any) -> bool | None:
        return v if isinstance(v, bool) else None

    return ModelProps(
        model=model,
        vision=tri(mods.get("vision")),
        audio=tri(mods.get("audio")),
        n_ctx=n_ctx,
        total_slots=_int_or_none(body.get("total_slots")),
        is_sleeping=tri(body.get("is_sleeping")),
        raw=body,
    )


def parse_event(payload: str) -> RouterEvent:
    """One SSE `data:` payload -> a typed event. Garbage becomes an UnknownEvent(kind="invalid")."""
    try:
        obj = json.loads(payload)
    except json.JSONDecodeError:
        return UnknownEvent(model="", kind="invalid", data={"raw": payload[:500]})
    if not isinstance(obj, dict) or not isinstance(obj.get("event"), str):
        return UnknownEvent(model="", kind="invalid", data={"raw": payload[:500]})
    model = str(obj.get("model", ""))
    kind = obj["event"]
    data = _obj(obj.get("data"))
    if kind in ("model_status", "status_change"):
        exit_code = _int_or_none(data.get("exit_code"))
        info = data.get("info")
        return ModelStatusEvent(
            model=model,
            kind=kind,
            status=state_of(data.get("status"), exit_code),
            exit_code=exit_code,
            progress=parse_progress(data.get("progress")),
            info=info if isinstance(info, dict) else None,
        )
    if kind == "download_progress":
        per_url = _obj(data.get("progress"))
        done = sum((_int_or_none(v.get("done")) or 0) for v in per_url.values() if isinstance(v, dict))
        total = sum((_int_or_none(v.get("total")) or 0) for v in per_url.values() if isinstance(v, dict))
        return DownloadProgressEvent(model=model, done=done, total=total)
    if kind in ("download_finished", "download_failed"):
        return DownloadResultEvent(model=model, ok=kind == "download_finished")
    if kind == "model_remove":
        return ModelRemovedEvent(model=model)
    if kind == "models_reload":
        return ModelsReloadEvent(model=model)
    return UnknownEvent(model=model, kind=kind, data=data)


def error_message(body_text: str) -> str:
    """The router's own words from an error answer: {"error":{"message":...}} or the plain text."""
    try:
        obj = json.loads(body_text)
    except json.JSONDecodeError:
        return body_text.strip()[:500] or "(empty answer)"
    if isinstance(obj, dict):
        err = obj.get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return str(err["message"])
        if isinstance(err, str):
            return err
    return _short(obj, 500)
