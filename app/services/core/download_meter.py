"""A download's progress as an operator reads it: bytes done of total, the rate over the last few seconds, and the
time left at that rate. Pure: fed the router's `download_progress` figures and the clock. Used by a pull (hub/)
and by a machine's model list (a downloading row shows it, whoever asked for the download)."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

# The rate is measured over this window: long enough to smooth the child's uneven steps, short enough to follow a
# link that slows down.
RATE_WINDOW = 5.0
# Bound: downloads followed at once per machine (the router runs as many as it is asked for).
MAX_METERS = 256


@dataclass(frozen=True)
class PullProgress:
    name: str
    done: int
    total: int  # 0 while unknown
    rate: float | None  # bytes per second; None until two samples
    eta: float | None  # seconds left; None when the rate or total is unknown

    @property
    def fraction(self) -> float | None:
        return min(1.0, self.done / self.total) if self.total else None


class ProgressMeter:
    def __init__(self, name: str, expected_total: int = 0) -> None:
        self.name = name
        self.expected_total = expected_total  # from the hub's listing, when known: the events reveal files one by one
        self._samples: deque[tuple[float, int]] = deque()
        self.last = PullProgress(name, 0, expected_total, None, None)

    def update(self, done: int, total: int, now: float) -> PullProgress:
        total = max(total, self.expected_total)
        self._samples.append((now, done))
        while len(self._samples) > 2 and now - self._samples[0][0] > RATE_WINDOW:
            self._samples.popleft()
        rate = None
        t0, d0 = self._samples[0]
        if now > t0 and done >= d0 and len(self._samples) >= 2:
            rate = (done - d0) / (now - t0)
        eta = (total - done) / rate if rate and total >= done else None
        self.last = PullProgress(self.name, done, total, rate, eta)
        return self.last


class DownloadMeters:
    """One meter per downloading model of a machine, forgotten when its download ends."""

    def __init__(self) -> None:
        self._meters: dict[str, ProgressMeter] = {}

    def update(self, model: str, done: int, total: int, now: float | None = None) -> PullProgress:
        meter = self._meters.get(model)
        if meter is None:
            if len(self._meters) >= MAX_METERS:
                self._meters.clear()
            meter = self._meters[model] = ProgressMeter(model)
        return meter.update(done, total, time.monotonic() if now is None else now)

    def forget(self, model: str) -> None:
        self._meters.pop(model, None)
