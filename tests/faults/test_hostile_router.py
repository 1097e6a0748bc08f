"""A hostile router on loopback against the real `llamaherd` process: every case ends with a clear message
naming the router and what was exceeded, and llamaherd's peak RSS (the kernel's high-water mark) stays under
150 MB. Before the size limits, an endless /models body grew `models` by gigabytes.
"""

from __future__ import annotations

import json
import shutil
import socket
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import hostile_http as H
from tests.helpers.measure_rss import ROOT, Measured, dashboard_peak, run_llamaherd
from tests.helpers.needs import require

RSS_LIMIT_MB = 150.0
Answer = Callable[[socket.socket, threading.Event], None]


def run_against(tmp_path: Path, overrides: dict[str, Answer], *args: str, run_for: float | None = None) -> Measured:
    with H.HostileRouter(overrides) as r:
        cfg = tmp_path / "config.toml"
        cfg.write_text(f'[[machines]]\nname = "box"\nurl = "{r.url}"\n')
        m = run_llamaherd(cfg, *args, workdir=tmp_path, timeout=60, run_for=run_for, rss_cap_mb=1024)
    print(m.line(" ".join(args)))  # the figure, for whoever runs this with -s
    assert not m.capped and m.peak_mb < RSS_LIMIT_MB, m.line(" ".join(args))
    return m


def stream_states(m: Measured) -> list[dict[str, object]]:
    return [e for e in (json.loads(ln) for ln in m.stdout.splitlines()) if e["event"] == "stream_state"]


@pytest.mark.parametrize(
    ("answer", "expect"),
    [
        (H.endless_models, "box: GET /models: the answer passed the 16 MiB limit"),
        (H.huge_declared, "box: GET /models: the answer is 65536 MiB, over the 16 MiB limit"),
        (H.drip_models, "box: GET /models: router not answering (no answer within 10 s)"),
    ],
    ids=["endless-body", "64GB-declared", "one-byte-every-half-second"],
)
def test_models_ends_with_the_reason(tmp_path: Path, answer: Answer, expect: str) -> None:
    m = run_against(tmp_path, {"/models": answer}, "models", "box")
    assert m.returncode == 1 and expect in m.stderr, m.stderr
    assert m.stdout == ""


def test_twenty_thousand_models_are_listed(tmp_path: Path) -> None:
    m = run_against(tmp_path, {"/models": H.many_models(20_000)}, "models", "box", "--json")
    assert m.returncode == 0, m.stderr
    ids = [x["id"] for x in json.loads(m.stdout)]
    assert len(ids) == 20_000 and ids[-1] == "model-19999"


@pytest.mark.parametrize(
    ("answer", "state", "expect"),
    [
        (H.endless_sse_line, "disconnected", "box: GET /models/sse: an event-stream line passed the 1 MiB limit"),
        (H.huge_event, "disconnected", "box: GET /models/sse: an event passed the 4 MiB limit"),
        (H.headerless, "not_answering", "box: GET /models/sse: router not answering (no headers within 4 s)"),
    ],
    ids=["endless-line", "huge-event", "no-headers"],
)
def test_events_reports_the_broken_stream(tmp_path: Path, answer: Answer, state: str, expect: str) -> None:
    m = run_against(tmp_path, {"/models/sse": answer}, "events", "box", run_for=15.0)
    assert m.returncode is None, m.stderr  # `events` follows until stopped: it was still running
    states = stream_states(m)
    assert any(s["state"] == state and s["reason"] == expect for s in states), m.stdout[:2000]
    # Retried with a growing delay, not every 0.5 s against a router that keeps sending garbage.
    assert sum(1 for s in states if s["state"] == "connected") <= 6, m.stdout[:2000]


@pytest.mark.parametrize(
    ("path", "answer", "expect"),
    [
        ("/models", H.endless_models, "GET /models: the answer passed the 16"),
        ("/models/sse", H.endless_sse_line, "GET /models/sse: an event-stream line"),
        ("/models/sse", H.headerless, "GET /models/sse: no headers within 4 s"),
    ],
    ids=["endless-body", "endless-line", "no-headers"],
)
@pytest.mark.tmux  # dashboard_peak runs the dashboard in a tmux server of its own
def test_dashboard_stays_up_small_and_says_why(tmp_path: Path, path: str, answer: Answer, expect: str) -> None:
    require(shutil.which("tmux") is not None, "tmux")
    with H.HostileRouter({path: answer}) as r:
        peak, how = dashboard_peak(r.url, tmp_path, str(ROOT), 15.0, 1024)
    print(f"dashboard {path}: peak RSS {peak:.0f} MB, {how}")
    assert how.startswith("still up") and peak < RSS_LIMIT_MB, (peak, how)
    assert "not answering" in how and expect in how, how
