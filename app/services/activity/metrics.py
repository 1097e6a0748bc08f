"""Live activity of a loaded model: its child's /metrics (Prometheus text) and /slots (JSON) parsed, and rates
computed from counter deltas between two polls (the server's own `*_tokens_seconds` gauges are lifetime averages:
a model idle for an hour still shows its old speed there).

Everything here is pure: answers in, numbers out. Router answers are hostile input: a line that does not parse,
a value that is not a finite non-negative number, or anything past the line bound is ignored, never raised.
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from app.services.core.natural_order import natural_key

# Bounds of what is read from a child (the whole answer is read within these by the router client).
METRICS_LIMIT = 256 * 1024  # this build's /metrics is ~2.5 KB
SLOTS_LIMIT = 2 * 1024 * 1024  # ~2.5 KB per slot with its sampling params; 4 slots by default
MAX_METRIC_LINES = 2000  # lines looked at; the rest of an answer is ignored
MAX_METRIC_LINE = 1024  # longer lines are ignored
MAX_SLOTS = 4096  # slot objects looked at
# Bound: tokens/s samples kept per model for its sparkline: a minute at the default 2 s between polls.
SPARK_POINTS = 30

NO_METRICS_HINT = (
    "no activity figures: this router was started without --metrics (routers llamaherd starts get it; "
    "restart this one with --metrics to see tokens/s)"
)

_SAMPLE = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?[ \t]+(\S+)(?:[ \t]+\S+)?")

WANTED = frozenset(
    {
        "llamacpp:prompt_tokens_total",
        "llamacpp:tokens_predicted_total",
        "llamacpp:requests_processing",
        "llamacpp:requests_deferred",
        "llamacpp:kv_cache_tokens",  # older builds only; this one has no KV gauge
    }
)


def parse_metrics(text: str) -> dict[str, float]:
    """The llamacpp samples this module uses, by name (the first of each wins; labels are ignored)."""
    out: dict[str, float] = {}
    for n, line in enumerate(text.splitlines()):
        if n >= MAX_METRIC_LINES:
            break
        if len(line) > MAX_METRIC_LINE or not line or line.startswith("#"):
            continue
        m = _SAMPLE.fullmatch(line.strip())
        if m is None or m.group(1) not in WANTED or m.group(1) in out:
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        if math.isfinite(value) and value >= 0:
            out[m.group(1)] = value
    return out


@dataclass(frozen=True)
class SlotsView:
    busy: int
    total: int
    decoded: int
    """Tokens generated so far by the requests in flight (the counters count a request only when it ends)."""


def parse_slots(body: Any) -> SlotsView | None:
    """`GET /slots`: a list of slot objects. None when it is not one."""
    if not isinstance(body, list):
        return None
    busy = total = decoded = 0
    for slot in body[:MAX_SLOTS]:
        if not isinstance(slot, dict):
            continue
        total += 1
        if slot.get("is_processing") is not True:
            continue
        busy += 1
        nxt = slot.get("next_token")
        for t in nxt[:16] if isinstance(nxt, list) else ():
            d = t.get("n_decoded") if isinstance(t, dict) else None
            if isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 1 << 40:
                decoded += d
    return SlotsView(busy, total, decoded)


@dataclass(frozen=True)
class Sample:
    """One poll of one model."""

    at: float
    generated: float
    """Tokens generated: the counter plus the in-flight requests' tokens (read after it, so never counted twice)."""
    prompt: float
    processing: int
    deferred: int
    slots_busy: int
    slots_total: int | None
    kv_used: int | None


def sample_of(at: float, metrics: dict[str, float], slots: SlotsView | None, slots_total: int | None) -> Sample:
    processing = int(metrics.get("llamacpp:requests_processing", 0))
    kv = metrics.get("llamacpp:kv_cache_tokens")
    return Sample(
        at=at,
        generated=metrics.get("llamacpp:tokens_predicted_total", 0.0) + (slots.decoded if slots else 0),
        prompt=metrics.get("llamacpp:prompt_tokens_total", 0.0),
        processing=processing,
        deferred=int(metrics.get("llamacpp:requests_deferred", 0)),
        # Without a /slots read (asked only while something is processing: see activity_poll), a request in
        # progress holds one slot.
        slots_busy=slots.busy if slots else min(processing, slots_total or processing),
        slots_total=slots.total if slots and slots.total else slots_total,
        kv_used=int(kv) if kv is not None else None,
    )


@dataclass(frozen=True)
class ModelActivity:
    machine: str
    model: str
    metrics: bool
    """False: the router answers no /metrics (started without --metrics); every figure below is then None."""
    tokens_per_s: float | None = None
    """Generation speed since the previous poll; None on the first poll of a model."""
    prompt_tokens_per_s: float | None = None
    requests_processing: int | None = None
    requests_deferred: int | None = None
    slots_busy: int | None = None
    slots_total: int | None = None
    kv_cells_used: int | None = None
    spark: tuple[float, ...] = ()
    """The last SPARK_POINTS tokens/s figures, oldest first."""


def no_metrics(machine: str, model: str) -> ModelActivity:
    return ModelActivity(machine=machine, model=model, metrics=False)


def _rate(new: float, old: float, dt: float) -> float:
    # A counter that went down belongs to a new child (the model was reloaded): nothing is known of this interval.
    return max(0.0, new - old) / dt


class Rates:
    """The previous sample and the sparkline of every model polled, keyed by (machine, model)."""

    def __init__(self) -> None:
        self._last: dict[tuple[str, str], Sample] = {}
        self._spark: dict[tuple[str, str], deque[float]] = {}

    def update(self, machine: str, model: str, s: Sample) -> ModelActivity:
        key = (machine, model)
        before = self._last.get(key)
        tps = pps = None
        if before is not None and s.at > before.at:
            dt = s.at - before.at
            tps, pps = _rate(s.generated, before.generated, dt), _rate(s.prompt, before.prompt, dt)
        self._last[key] = s
        spark = self._spark.setdefault(key, deque(maxlen=SPARK_POINTS))
        if tps is not None:
            spark.append(tps)
        return ModelActivity(
            machine=machine,
            model=model,
            metrics=True,
            tokens_per_s=tps,
            prompt_tokens_per_s=pps,
            requests_processing=s.processing,
            requests_deferred=s.deferred,
            slots_busy=s.slots_busy,
            slots_total=s.slots_total,
            kv_cells_used=s.kv_used,
            spark=tuple(spark),
        )

    def keep_only(self, keys: Iterable[tuple[str, str]]) -> None:
        """Forget models no longer polled (unloaded): a reload starts its counters, and its sparkline, afresh."""
        live = set(keys)
        for k in [k for k in self._last if k not in live]:
            del self._last[k]
        for k in [k for k in self._spark if k not in live]:
            del self._spark[k]

    def __len__(self) -> int:
        return len(self._last)


def busiest_first(acts: Iterable[ModelActivity]) -> list[ModelActivity]:
    """Most tokens/s first, then most requests in flight, then by name."""
    return sorted(
        acts,
        key=lambda a: (
            -(a.tokens_per_s or 0.0), -(a.requests_processing or 0), natural_key(a.machine), natural_key(a.model)
        ),
    )  # fmt: skip
