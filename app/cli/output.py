"""Printing typed values for people (tables) and scripts (JSON lines)."""

from __future__ import annotations

import dataclasses
import json
import sys
from enum import Enum
from typing import Any

from app.services.core.natural_order import natural_key
from app.services.core.router_types import (
    ModelInfo,
    ModelListEvent,
    ModelsReloadEvent,
    ModelStatusEvent,
    RouterEvent,
    StreamStateEvent,
)
from app.services.core.textsafe import visible, visible_lines


def to_jsonable(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Enum):
        return obj.value
    if isinstance(obj, tuple | list):
        return [to_jsonable(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    return obj


def event_json(ev: RouterEvent) -> str:
    """One line per event; `event` says which kind (the router's own name where it has one)."""
    body: dict[str, Any]
    if isinstance(ev, ModelStatusEvent):
        body = {"event": ev.kind, "model": ev.model, "status": ev.status.value}
        if ev.exit_code is not None:
            body["exit_code"] = ev.exit_code
        if ev.progress is not None:
            body["progress"] = to_jsonable(ev.progress)
        if ev.info is not None:
            body["meta"] = ev.info.get("meta")
    elif isinstance(ev, ModelListEvent):
        body = {"event": "models", "models": {m.id: m.state.value for m in ev.models}}
    else:
        kind = getattr(ev, "kind", None) or _snake(type(ev).__name__)
        body = {"event": kind, **{k: v for k, v in to_jsonable(ev).items() if k != "kind"}}
    return json.dumps(body, separators=(",", ":"))


class EventLines:
    """`llamaherd events`: one line per router event. The service re-reads the full list every 30 s of silence
    (the dashboard's safety net); that re-read is printed only when it shows something the lines so far did not.
    The list after a (re)connect or a reload is always printed: it is the answer to that event."""

    def __init__(self) -> None:
        self.known: dict[str, str] | None = None  # model -> status, as the printed lines tell it
        self.list_is_news = True

    def line(self, ev: RouterEvent) -> str | None:
        if isinstance(ev, ModelListEvent):
            listed = {m.id: m.state.value for m in ev.models}
            if listed == self.known and not self.list_is_news:
                return None
            self.known, self.list_is_news = listed, False
        elif isinstance(ev, ModelStatusEvent):
            if self.known is not None:
                self.known[ev.model] = ev.status.value
        elif isinstance(ev, StreamStateEvent | ModelsReloadEvent):
            self.list_is_news = True
        return event_json(ev)


def _snake(name: str) -> str:
    name = name.removesuffix("Event")
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


def human_size(n: int | None) -> str:
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "K", "M", "G", "T"):
        if size < 1024 or unit == "T":
            return f"{size:.0f}{unit}" if unit == "B" else f"{size:.1f}{unit}"
        size /= 1024
    return str(n)


def human_count(n: int | None) -> str:
    if n is None:
        return "-"
    for div, unit in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if n >= div:
            return f"{n / div:.1f}{unit}"
    return str(n)


def models_table(models: list[ModelInfo]) -> str:
    rows = [("MODEL", "STATUS", "CTX", "PARAMS", "SIZE", "ALIASES")]
    for m in sorted(models, key=lambda m: natural_key(m.id)):
        status = m.state.value
        if m.state.value == "failed":
            status = f"failed (exit {m.exit_code})"
        rows.append(
            (
                visible(m.id),
                status,
                str(m.ctx or "-"),
                human_count(m.n_params),
                human_size(m.size),
                visible(",".join(m.aliases)) or "-",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)


def print_json_list(items: list[Any]) -> None:
    """`print(json.dumps(items, indent=2))`, the same text, item by item: one string of 20,000 models at once
    took the command past 150 MB."""
    if not items:
        print("[]")
        return
    out = sys.stdout
    out.write("[\n")
    for i, item in enumerate(items):
        text = json.dumps(item, indent=2).replace("\n", "\n  ")
        out.write(f"  {text}{',' if i < len(items) - 1 else ''}\n")
    out.write("]\n")


def err(msg: str) -> None:
    # Messages carry outside text (paths, router answers, remote stderr): shown, never interpreted.
    print(f"llamaherd: {visible_lines(msg)}", file=sys.stderr)
