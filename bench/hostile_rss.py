"""Peak RSS of llamaherd against a hostile router on loopback: the headless commands and the dashboard.

Each case runs the real `python -m app` against tests/faults/hostile_http.py and reads the kernel's high-water
mark (VmHWM). A process that passes the cap (default 1500 MB) is killed at once and reported as such: that is
what the code before the size limits did. `--app DIR` measures another checkout's `app` package (the "before").

Run: python -m bench.hostile_rss [--app DIR] [--cap MB] [--only TEXT]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from bench.common import workdir
from tests.faults import hostile_http as H
from tests.faults.measure import run_llamaherd

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


def _hwm_mb(pid: int, key: str = "VmHWM") -> float:
    try:
        for ln in Path(f"/proc/{pid}/status").read_text().splitlines():
            if ln.startswith(key + ":"):
                return int(ln.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return 0.0


def dashboard_peak(url: str, d: Path, app_path: str, seconds: float, cap: float) -> tuple[float, str]:
    """The dashboard in a tmux pane of its own for `seconds`: (peak RSS MB, how it ended and what it showed)."""
    cfg = d / "config.toml"
    cfg.write_text(f'[[machines]]\nname = "box"\nurl = "{url}"\n')
    sock = f"llamaherd-bench-{os.getpid()}"
    env = f"TERM=screen-256color LANG=C.UTF-8 PYTHONPATH={shlex.quote(app_path)} XDG_STATE_HOME={shlex.quote(str(d))}"
    cmd = f"cd {shlex.quote(app_path)} && exec env {env} {shlex.quote(sys.executable)} -m app --config {cfg}"
    subprocess.run(["tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "-x", "120", "-y", "40", cmd],
                   check=True, timeout=10)  # fmt: skip
    out = subprocess.run(["tmux", "-L", sock, "display-message", "-p", "#{pane_pid}"], capture_output=True,
                         text=True, timeout=10).stdout.strip()  # fmt: skip
    server = subprocess.run(["tmux", "-L", sock, "display-message", "-p", "#{pid}"], capture_output=True,
                            text=True, timeout=10).stdout.strip()  # fmt: skip
    pid = int(out)
    peak, how = 0.0, ""
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end:
            peak = max(peak, _hwm_mb(pid))
            if _hwm_mb(pid, "VmRSS") > cap:
                how = "killed at the RSS cap"
                os.kill(pid, signal.SIGKILL)
                break
            if not Path(f"/proc/{pid}").exists():
                how = "EXITED before the end"
                break
            time.sleep(0.05)
        peak = max(peak, _hwm_mb(pid))
        if not how:
            screen = subprocess.run(["tmux", "-L", sock, "capture-pane", "-p"], capture_output=True, text=True,
                                    timeout=10).stdout  # fmt: skip
            card = [ln.split("││")[0].strip("│ ") for ln in screen.splitlines()[2:5]]
            how = "still up, the card says: " + " / ".join(c for c in card if c)
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True, timeout=10)
        for p in (pid, int(server) if server.isdigit() else 0):
            if p:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p, signal.SIGKILL)
    return peak, how


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
