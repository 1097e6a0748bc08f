"""`llamaherd serve` for tests: started on a free loopback port for a Herd, its address read from what it prints,
stopped by pid (SIGTERM, as systemd stops it; its session processes are its children and go with it)."""

from __future__ import annotations

import contextlib
import re
import signal
import ssl
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil

from tests.helpers.herd import Herd
from tests.helpers.wait import wait_for_sync

ADDRESS = re.compile(r"metrics at (https?://127\.0\.0\.[0-9]+:[0-9]+)/metrics")


@dataclass
class Served:
    herd: Herd
    proc: subprocess.Popen[str]
    base: str
    token: str
    said: list[str]

    verify: ssl.SSLContext | bool = True

    def metrics(self) -> str:
        auth = {"Authorization": f"Bearer {self.token}"}
        r = httpx.get(self.base + "/metrics", headers=auth, timeout=10, verify=self.verify)
        r.raise_for_status()
        return r.text

    def sample(self, name: str, **labels: str) -> float | None:
        """One sample's value from a scrape (None: no such sample)."""
        want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        for line in self.metrics().splitlines():
            if line.startswith(name + "{"):
                got = ",".join(sorted(line[len(name) + 1 : line.rindex("}")].split(",")))
                if got == want:
                    return float(line.rsplit(" ", 1)[1])
        return None

    def session_pids(self) -> list[int]:
        with contextlib.suppress(psutil.NoSuchProcess):
            return [p.pid for p in psutil.Process(self.proc.pid).children(recursive=True)]
        return []

    def stop(self) -> int:
        """SIGTERM, then SIGKILL by pid for whatever is left (the server, its session processes)."""
        kids = self.session_pids()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        for pid in kids:
            with contextlib.suppress(psutil.NoSuchProcess):
                psutil.Process(pid).kill()
        return self.proc.returncode


def start_serve(herd: Herd, *args: str, env: dict[str, str] | None = None, timeout: float = 30) -> Served:
    proc = subprocess.Popen(
        [*herd_argv(herd), "serve", "--port", "0", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**herd.env, **(env or {})},
    )  # fmt: skip
    said: list[str] = []

    def listening() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"serve exited {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}")
        assert proc.stdout is not None
        said.append(proc.stdout.readline())
        return bool(ADDRESS.search(said[-1]))

    try:
        wait_for_sync(listening, timeout, what="serve listening", explain=lambda: "".join(said))
        said.append(proc.stdout.readline() if proc.stdout else "")  # the line naming where the token is
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    m = ADDRESS.search("".join(said))
    assert m is not None
    token = (env or {}).get("LLAMAHERD_SERVE_TOKEN") or herd.run("serve", "--show-token").stdout.strip()
    return Served(herd, proc, m.group(1), token, said)


def herd_argv(herd: Herd) -> list[str]:
    return [sys.executable, "-m", "app", "--config", str(herd.config)]


def token_file(herd: Herd) -> Path:
    return herd.state_home / "llamaherd" / "serve.token"
