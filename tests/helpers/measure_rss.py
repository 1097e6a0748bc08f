"""Run a real `llamaherd` process and measure it: exit status, output, wall time and peak RSS.

Peak RSS is the kernel's own high-water mark of the process's memory, `VmHWM` in /proc, read every 20 ms while it
runs (and last just before it is stopped). Not wait4()'s ru_maxrss: exec() records the parent's high-water mark
into it (the child shared the test process's memory until exec), so a child of a big pytest process "peaked" at
the parent's size. A process that passes `rss_cap_mb` is killed at once (the code before the size limits grew to
gigabytes; a measurement must not take the machine with it).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Measured:
    returncode: int | None  # None: still running when stopped after `run_for`
    stdout: str
    stderr: str
    seconds: float
    peak_mb: float
    capped: bool  # killed for passing the RSS cap

    def line(self, label: str) -> str:
        how = "killed at the RSS cap" if self.capped else f"exit {self.returncode}"
        return f"{label}: peak RSS {self.peak_mb:.0f} MB, {self.seconds:.1f} s, {how}"


def _status_mb(pid: int, key: str) -> float:
    try:
        for ln in Path(f"/proc/{pid}/status").read_text().splitlines():
            if ln.startswith(key + ":"):
                return int(ln.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return 0.0


def run_llamaherd(
    config: Path,
    *args: str,
    workdir: Path,
    timeout: float = 60.0,
    run_for: float | None = None,
    rss_cap_mb: float = 2048.0,
    app_path: str | None = None,
) -> Measured:
    """`python -m app --config CONFIG ARGS`; stopped (SIGTERM, then SIGKILL) after `run_for` seconds if given."""
    out_p, err_p = workdir / "out.txt", workdir / "err.txt"
    env = {**os.environ, "PYTHONPATH": app_path or str(ROOT), "XDG_STATE_HOME": str(workdir / "state")}
    t0 = time.monotonic()
    with open(out_p, "wb") as out, open(err_p, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "app", "--config", str(config), *args],
            stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env, cwd=app_path or str(ROOT),
        )  # fmt: skip
    capped = False
    peak = 0.0
    end = t0 + (run_for if run_for is not None else timeout)
    rc: int | None = None
    while time.monotonic() < end:
        peak = max(peak, _status_mb(proc.pid, "VmHWM"))
        pid, status, _usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            rc = os.waitstatus_to_exitcode(status)
            break
        if _status_mb(proc.pid, "VmRSS") > rss_cap_mb:
            capped = True
            break
        time.sleep(0.02)
    seconds = time.monotonic() - t0
    if rc is None:  # still running: stopped here, by pid
        peak = max(peak, _status_mb(proc.pid, "VmHWM"))
        _stop(proc.pid, signal.SIGKILL if capped else signal.SIGTERM)
    proc.returncode = rc if rc is not None else -1
    return Measured(
        returncode=rc,
        stdout=out_p.read_text(errors="replace"),
        stderr=err_p.read_text(errors="replace"),
        seconds=seconds,
        peak_mb=peak,
        capped=capped,
    )


def _stop(pid: int, sig: int) -> None:
    """Stop and reap the process."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        if os.waitpid(pid, os.WNOHANG)[0]:
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


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
            peak = max(peak, _status_mb(pid, "VmHWM"))
            if _status_mb(pid, "VmRSS") > cap:
                how = "killed at the RSS cap"
                os.kill(pid, signal.SIGKILL)
                break
            if not Path(f"/proc/{pid}").exists():
                how = "EXITED before the end"
                break
            time.sleep(0.05)
        peak = max(peak, _status_mb(pid, "VmHWM"))
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
