"""Pure formatting: sizes, counts, durations, and the words and colours of every state.

Colours are ANSI names (green, yellow, ...) rather than hex, so they follow the terminal's own palette and keep
their contrast in tmux with TERM=screen-256color, where true colour is not passed through.
"""

from __future__ import annotations

import re

from app.services.core.connect_cause import names_a_connect_cause
from app.services.core.fleet_events import MachineView
from app.services.core.host_types import Connection
from app.services.core.router_types import ModelInfo, ModelState, RouterState
from app.services.core.textsafe import visible
from app.ui.text.glyphs import Glyphs

OK = "green"
BUSY = "yellow"
IDLE = "cyan"
BAD = "red"
DIM = "bright_black"
INFO = "magenta"


def human_bytes(n: int | float | None) -> str:
    """Binary units, short: 512B, 37K, 512M, 1.2G, 3.4T."""
    if n is None:
        return ""
    v = float(n)
    for unit in ("B", "K", "M", "G", "T"):
        if abs(v) < 1024 or unit == "T":
            if unit == "B":
                return f"{int(v)}B"
            return f"{v:.1f}{unit}" if abs(v) < 10 else f"{v:.0f}{unit}"
        v /= 1024
    return f"{v:.0f}P"  # pragma: no cover - the loop returns at T


def human_count(n: int | None) -> str:
    """Decimal units for parameter counts: 950, 12K, 135M, 7.2B."""
    if n is None:
        return ""
    v = float(n)
    for unit in ("", "K", "M", "B", "T"):
        if abs(v) < 1000 or unit == "T":
            if not unit:
                return str(int(v))
            return f"{v:.1f}{unit}" if abs(v) < 10 else f"{v:.0f}{unit}"
        v /= 1000
    return f"{v:.0f}Q"  # pragma: no cover


def human_ctx(n: int | None) -> str:
    if n is None:
        return ""
    if n < 10_000:
        return str(n)
    return f"{n / 1024:.0f}k"


def duration(seconds: float | None) -> str:
    """Two units at most, the way an operator reads an uptime: 45s, 12m05s, 3h07m, 5d02h."""
    if seconds is None:
        return ""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m}m{s:02d}s"
    h, m = divmod(m, 60)
    if h < 24:
        return f"{h}h{m:02d}m"
    d, h = divmod(h, 24)
    return f"{d}d{h:02d}h"


def uptime(seconds: float | None) -> str:
    """A router's uptime: seconds only in its first minute (a restart is seen at once), then to the minute (12m,
    3h07m, 5d02h), so an idle card's text, and so the card, changes once a minute, not every second."""
    if seconds is None or seconds < 60:
        return duration(seconds)
    m = int(seconds) // 60
    return f"{m}m" if m < 60 else duration(seconds)


# ---- models ----


def is_failed(m: ModelInfo) -> bool:
    return m.state is ModelState.FAILED or (m.state is ModelState.UNLOADED and m.failed)


def progress_fraction(m: ModelInfo) -> float | None:
    if m.state is not ModelState.LOADING or m.progress is None:
        return None
    return min(1.0, max(0.0, m.progress.value))


def badge(m: ModelInfo, g: Glyphs) -> tuple[str, str]:
    """(text, style) of a model's status cell."""
    if is_failed(m):
        code = "" if m.exit_code is None else f" (exit {m.exit_code})"
        return f"{g.failed} failed{code}", f"bold {BAD}"
    st = m.state
    if st is ModelState.LOADED:
        return f"{g.loaded} loaded", f"bold {OK}"
    if st is ModelState.LOADING:
        frac = progress_fraction(m)
        if frac is None:
            return f"{g.loading} loading", BUSY
        return f"{g.loading} loading {frac * 100:3.0f}% {g.bar(frac, 5)}", BUSY
    if st is ModelState.SLEEPING:
        return f"{g.sleeping} sleeping", IDLE
    if st is ModelState.DOWNLOADING:
        return download_badge(m, g), INFO
    if st is ModelState.DOWNLOADED:
        return f"{g.unloaded} downloaded", INFO
    if st is ModelState.UNLOADED:
        return f"{g.unloaded} unloaded", DIM
    return f"? {st.value}", DIM


def download_badge(m: ModelInfo, g: Glyphs) -> str:
    """ "⇣ downloading  45% ▮▮▯▯▯ 120M/270M 31M/s 0:05" while its progress events come (the list has none)."""
    d = m.download
    if d is None or d.fraction is None:
        return f"{g.downloading} downloading" + (f" {human_bytes(d.done)}" if d is not None and d.done else "")
    # Each figure in a field of fixed width: the status column is as wide as its widest cell, and a figure one
    # character wider ("9.5M/s" to "10M/s" and back, "0:59" to "10:00") drew the whole table again for it.
    rate = f" {human_bytes(d.rate):>5}/s" if d.rate else ""
    eta = f" {int(d.eta) // 60:>2}:{int(d.eta) % 60:02d}" if d.eta is not None and d.eta < 360_000 else ""
    sizes = f"{human_bytes(d.done):>5}/{human_bytes(d.total)}"
    return f"{g.downloading} downloading {d.fraction * 100:3.0f}% {g.bar(d.fraction, 5)} {sizes}{rate}{eta}"


def vision(m: ModelInfo) -> tuple[str, str]:
    """Three states (router-lessons "Pictures"): a model not loaded yet has not said, unless it already did."""
    if "image" in m.input_modalities:
        return "yes", OK
    if m.state in (ModelState.LOADED, ModelState.SLEEPING) or m.vision_said is False:
        return "no", ""
    return "?", DIM


STATE_ORDER = {
    ModelState.LOADED: 0,
    ModelState.LOADING: 1,
    ModelState.SLEEPING: 2,
    ModelState.DOWNLOADING: 3,
    ModelState.FAILED: 4,
    ModelState.DOWNLOADED: 5,
    ModelState.UNLOADED: 6,
    ModelState.UNKNOWN: 7,
}


def state_rank(m: ModelInfo) -> int:
    return STATE_ORDER[ModelState.FAILED] if is_failed(m) else STATE_ORDER.get(m.state, 9)


# ---- machines ----


def is_down(v: MachineView) -> bool:
    return v.connection is Connection.UNREACHABLE or v.router_state in (
        RouterState.EXITED,
        RouterState.UNREACHABLE,
    )


def connection_text(v: MachineView) -> tuple[str, str]:
    c = v.connection
    if c is Connection.LOCAL:
        return "local", DIM
    if c is Connection.CONNECTED:
        return "connected", OK
    if c is Connection.CONNECTING:
        return "connecting", BUSY
    reason = f": {visible(v.connection_reason)}" if v.connection_reason else ""
    return f"unreachable{reason}", BAD


def router_text(v: MachineView, now: float | None) -> tuple[str, str]:
    """(text, style) of the router line: running with uptime, starting, stopped on request, exited with code."""
    st = v.router_state
    up = f" {uptime(now - v.started_at)}" if now is not None and v.started_at else ""
    # An older llama-server without /models/sse is followed by polling every 2 s; the operator should know.
    polling = " · polling, no SSE" if v.stream == "polling" else ""
    if st is RouterState.RUNNING:
        return f"running{up}{polling}", OK
    if st is RouterState.ATTACHED:
        return f"attached{up}{polling}", OK
    if st is RouterState.STARTING:
        return "starting", BUSY
    if st is RouterState.STOPPING:
        return "stopping", BUSY
    if st is RouterState.STOPPED:
        return "stopped on request", DIM
    if st is RouterState.ABSENT:
        return "no router", DIM
    if st is RouterState.EXITED:
        code = f" with code {v.exit_code}" if v.exit_code is not None else ""
        why = f": {visible(v.router_reason)}" if v.router_reason else ""
        return f"exited{code}{why}", BAD
    if st is RouterState.UNREACHABLE:
        # Nothing answered at all (refused, no route, a name not resolved): "not answering" was the wrong word for
        # that; it stays for a router that is reached but whose answers fail (cut off, too big).
        why = f": {visible(v.router_reason)}" if v.router_reason else ""
        word = "unreachable" if names_a_connect_cause(v.router_reason) else "not answering"
        return f"{word}{why}", BAD
    if st is RouterState.NOT_ANSWERING:
        # Its process is there (so not "exited") but it says nothing in time; the reason says what timed out.
        why = re.sub(r"router not answering \((.*)\)$", r"\1", v.router_reason.removeprefix(f"{v.name}: ")).strip()
        return f"not answering{': ' + visible(why) if why else ''}", BAD
    return "router not seen yet", DIM
