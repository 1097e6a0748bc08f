"""`python -m scripts.recording OUT.cast` (`make recording`): the README's recording of the demo, asciicast v2.

`llamaherd demo` (its scenario running) is recorded by asciinema inside a tmux pane of its own, 120x36, while the
scripted tour (scripts/demo_tour.py) presses its keys and waits for what each shows, lingering so a viewer can
read; then `q`. The demo runs in a fresh state directory (ROOT, removed and made again on every run, so the paths
on screen are the same) and stops the routers it started when it quits. Timings differ between runs (real
routers, real loads); the story does not. The tmux server is this run's own and is stopped by pid at the end;
when the tour fails, the demo is quit with q (which stops its routers), and whatever still runs from ROOT is
stopped by pid.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from scripts.demo_tour import play

ROOT = Path("/tmp/llamaherd-recording")
MARKER = ".llamaherd-recording"
SIZE = (120, 36)
IDLE_LIMIT = 2.0  # seconds: a longer pause in the recording is cut to this (`asciinema rec -i`)


class Pane:
    def __init__(self, socket: str) -> None:
        self.socket = socket
        self.pids: list[int] = []

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=10).stdout

    def start(self, command: str, env: dict[str, str]) -> None:
        envs = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        cwd = shlex.quote(str(Path(__file__).resolve().parents[1]))
        self.tmux("-f", "/dev/null", "new-session", "-d", "-x", str(SIZE[0]), "-y", str(SIZE[1]), "-s", "rec",
                  f"cd {cwd} && exec env {envs} {command}")  # fmt: skip
        for fmt in ("#{pid}", "#{pane_pid}"):
            out = self.tmux("display-message", "-p", "-t", "rec", fmt).strip()
            if out.isdigit():
                self.pids.append(int(out))

    def key(self, key: str) -> None:
        self.tmux("send-keys", "-t", "rec", key)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "rec")

    def alive(self) -> bool:
        return (
            subprocess.run(["tmux", "-L", self.socket, "has-session", "-t", "rec"], capture_output=True).returncode == 0
        )

    def stop(self) -> None:
        self.tmux("kill-server")
        for pid in reversed(self.pids):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def fresh_root(root: Path) -> None:
    if root.exists() and any(root.iterdir()) and not (root / MARKER).exists():
        raise SystemExit(f"{root} holds files this script did not make; pick another --root")
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    (root / MARKER).write_text("made by python -m scripts.recording; removed at the end of each run\n")


def stop_leftovers(root: Path) -> None:
    """Every process still running from the demo's directory (its routers and their models), stopped by pid."""
    for p in psutil.process_iter(["pid", "cmdline"]):
        if str(root) in " ".join(p.info["cmdline"] or []):
            with contextlib.suppress(psutil.NoSuchProcess):
                p.kill()


def check_cast(path: Path) -> int:
    """An asciicast v2 of the demo: the header, then events; returns how many. Raises when it is not one."""
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    if header.get("version") != 2 or (header.get("width"), header.get("height")) != SIZE:
        raise SystemExit(f"{path}: not the asciicast v2 of a {SIZE[0]}x{SIZE[1]} terminal: {lines[0][:200]}")
    events = [json.loads(ln) for ln in lines[1:] if ln.strip()]
    if not any("workstation" in e[2] for e in events if e[1] == "o"):
        raise SystemExit(f"{path}: the demo's screen is not in it")
    return len(events)


def record(out: Path, root: Path) -> int:
    fresh_root(root)
    pane = Pane(f"llamaherd-recording-{os.getpid()}")
    tmp = out.with_suffix(".cast.partial")
    demo = f"{shlex.quote(sys.executable)} -m app demo --dir {shlex.quote(str(root / 'demo'))}"
    rec = [sys.executable, "-m", "asciinema", "rec", "--overwrite", "-q", "-i", str(IDLE_LIMIT),
           "-t", "llamaherd demo", "-c", demo, str(tmp)]  # fmt: skip
    env = {"TERM": "screen-256color", "LANG": "C.UTF-8", "XDG_STATE_HOME": str(root / "state"), "SHELL": "/bin/sh"}
    if os.environ.get("LLAMA_SERVER"):
        env["LLAMA_SERVER"] = os.environ["LLAMA_SERVER"]
    done = False
    try:
        pane.start(shlex.join(rec), env)
        play(pane.key, pane.screen, hold=time.sleep)
        pane.key("q")
        deadline = time.monotonic() + 60
        while pane.alive() and time.monotonic() < deadline:
            time.sleep(0.2)
        if pane.alive():
            raise SystemExit("the demo did not quit within 60 s of q")
        n = check_cast(tmp)
        tmp.replace(out)
        done = True
    finally:
        if not done:
            tmp.unlink(missing_ok=True)  # the last good recording stays
            for key in ("Escape", "Escape", "q"):  # q stops the routers the demo started; a killed demo leaves them
                pane.key(key)
                time.sleep(0.5)
            deadline = time.monotonic() + 30
            while pane.alive() and time.monotonic() < deadline:
                time.sleep(0.2)
        pane.stop()
        if not done:
            stop_leftovers(root)
    shutil.rmtree(root, ignore_errors=True)
    return n


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("out", type=Path, help="the .cast file to write (asciicast v2)")
    p.add_argument("--root", type=Path, default=ROOT, help=f"the demo's state directory (default {ROOT})")
    args = p.parse_args(argv)
    if shutil.which("tmux") is None:
        print("recording: tmux is needed (the demo is recorded in a tmux pane of its own)", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    n = record(args.out, args.root)
    print(f"recording: {args.out} ({n} events); play it with: asciinema play {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
