"""Peak RSS of llamaherd against a hostile router on loopback: the headless commands and the dashboard.

Each case runs the real `python -m app` against tests/helpers/hostile_http.py and reads the kernel's high-water
mark (VmHWM). A process that passes the cap (default 1500 MB) is killed at once and reported as such: that is
what the code before the size limits did. `--app DIR` measures another checkout's `app` package (the "before").

Run: python -m bench.hostile_rss [--app DIR] [--cap MB] [--only TEXT]
"""

from __future__ import annotations

import argparse
import shutil
import socket
import threading
from collections.abc import Callable
from pathlib import Path

from bench.common import workdir
from tests.helpers import hostile_http as H
from tests.helpers.measure_rss import dashboard_peak, run_llamaherd

Answer = Callable[[socket.socket, threading.Event], None]

HEADLESS: list[tuple[str, str, Answer, tuple[str, ...], float | None]] = [
    ("models, endless /models body", "/models", H.endless_models, ("models", "box"), None),
    ("models, 64 GB Content-Length", "/models", H.huge_declared, ("models", "box"), None),
    ("models, one byte every 0.5 s", "/models", H.drip_models, ("models", "box"), None),
    ("models --json, 20,000 models", "/models", H.many_models(20_000), ("models", "box", "--json"), None),
    ("events, SSE line without end (20 s)", "/models/sse", H.endless_sse_line, ("events", "box"), 20.0),
    ("events, event without end (20 s)", "/models/sse", H.huge_event, ("events", "box"), 20.0),
    ("events, SSE without headers (20 s)", "/models/sse", H.headerless, ("events", "box"), 20.0),
]
DASHBOARD: list[tuple[str, str, Answer]] = [
    ("dashboard, endless /models body (20 s)", "/models", H.endless_models),
    ("dashboard, SSE line without end (20 s)", "/models/sse", H.endless_sse_line),
    ("dashboard, event without end (20 s)", "/models/sse", H.huge_event),
    ("dashboard, 20,000 models (20 s)", "/models", H.many_models(20_000)),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--app", default=str(Path(__file__).resolve().parents[1]), help="checkout whose app to run")
    ap.add_argument("--cap", type=float, default=1500.0, help="kill a process past this RSS (MB)")
    ap.add_argument("--only", default="", help="only cases whose label holds this text")
    args = ap.parse_args()
    print(f"llamaherd from {args.app}; RSS cap {args.cap:.0f} MB")
    for label, path, answer, argv, run_for in HEADLESS:
        if args.only not in label:
            continue
        d = workdir()
        with H.HostileRouter({path: answer}) as r:
            cfg = d / "config.toml"
            cfg.write_text(f'[[machines]]\nname = "box"\nurl = "{r.url}"\n')
            m = run_llamaherd(cfg, *argv, workdir=d, timeout=60, run_for=run_for, rss_cap_mb=args.cap,
                              app_path=args.app)  # fmt: skip
        said = (m.stderr.strip().splitlines() or [""])[-1][:110]
        if run_for is not None:
            states = [ln for ln in m.stdout.splitlines() if '"stream_state"' in ln and '"connected"' not in ln]
            said = states[0][:160] if states else "(no stream_state line)"
        print(f"{m.line(label)}\n    {said}")
        shutil.rmtree(d, ignore_errors=True)
    if shutil.which("tmux") is None:
        print("dashboard cases skipped: tmux is not installed")
        return
    for label, path, answer in DASHBOARD:
        if args.only not in label:
            continue
        d = workdir()
        with H.HostileRouter({path: answer}) as r:
            peak, how = dashboard_peak(r.url, d, args.app, 20.0, args.cap)
        print(f"{label}: peak RSS {peak:.0f} MB\n    {how}")
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
