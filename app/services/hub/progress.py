"""A download's progress in words: "12.3 MB of 4.9 GB · 31.0 MB/s · 2:37 left" (the figures: core/download_meter.py)."""

from __future__ import annotations

from app.services.core.download_meter import ProgressMeter as ProgressMeter
from app.services.core.download_meter import PullProgress as PullProgress


def human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def human_eta(s: float | None) -> str:
    if s is None:
        return "--:--"
    s = int(s + 0.5)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 60}:{s % 60:02d}"


def progress_text(p: PullProgress) -> str:
    """ "12.3 MB of 4.9 GB · 31.0 MB/s · 2:37 left" """
    total = human_bytes(p.total) if p.total else "?"
    rate = f"{human_bytes(p.rate)}/s" if p.rate is not None else "-"
    return f"{human_bytes(p.done)} of {total} · {rate} · {human_eta(p.eta)} left"
