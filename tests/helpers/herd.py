"""Running the real `llamaherd` command against an isolated state directory, and cleaning up after it by pid."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from tests.helpers.wait import eventually


@dataclass
class Herd:
    """A config file plus an XDG_STATE_HOME of the test's own, so router records never leak between tests."""

    root: Path
    config: Path
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def state_home(self) -> Path:
        return self.root / "state"

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "XDG_STATE_HOME": str(self.state_home), **self.extra_env}

    def write_config(self, text: str) -> None:
        self.config.write_text(text)

    def run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "app", "--config", str(self.config), *args],
            capture_output=True, text=True, timeout=timeout, env=self.env,
        )  # fmt: skip

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "app", "--config", str(self.config), *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env,
        )  # fmt: skip

    def record(self, router: str = "default") -> dict[str, object] | None:
        p = self.state_home / "llamaherd" / "routers" / router / "record.json"
        try:
            return dict(json.loads(p.read_text()))
        except FileNotFoundError:
            return None

    def router_pids(self) -> list[int]:
        """Every llama-server whose command line names this test's state directory or preset."""
        pids = []
        for p in psutil.process_iter(["pid", "cmdline"]):
            cmd = " ".join(p.info["cmdline"] or [])
            if "--models-preset" in cmd and str(self.root) in cmd:
                pids.append(p.info["pid"])
        return pids

    def stop_all(self) -> None:
        """Stop every router this test started (and its children), by pid."""
        for pid in self.router_pids():
            with contextlib.suppress(psutil.NoSuchProcess):
                proc = psutil.Process(pid)
                kids = proc.children(recursive=True)
                for k in [proc, *kids]:
                    with contextlib.suppress(psutil.NoSuchProcess):
                        k.send_signal(signal.SIGKILL)
        eventually(lambda: not self.router_pids(), timeout=5)


def local_config(name: str, preset: Path, **extra: object) -> str:
    lines = ["[[machines]]", f'name = "{name}"', f'preset = "{preset}"']
    for k, v in extra.items():
        lines.append(f"{k} = {json.dumps(v)}")
    return "\n".join(lines) + "\n"
