"""A real llama-server router for tests: started on a free loopback port, stopped by pid."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.helpers.wait import wait_for_sync


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def preset_text(models: dict[str, Path | str], extra: dict[str, dict[str, str]] | None = None) -> str:
    lines = ["; written by the llamaherd test suite", "[*]", "ctx-size = 256", ""]
    for name, path in models.items():
        lines.append(f"[{name}]")
        lines.append(f"model = {path}")
        for k, v in (extra or {}).get(name, {}).items():
            lines.append(f"{k} = {v}")
        lines.append("")
    return "\n".join(lines)


@dataclass
class RouterProc:
    binary: str
    preset: Path
    log: Path
    port: int = 0
    models_max: int = 1
    extra_args: list[str] = field(default_factory=list)
    env: dict[str, str] | None = None
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def argv(self) -> list[str]:
        return [
            self.binary,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--models-preset",
            str(self.preset),
            "--models-max",
            str(self.models_max),
            *self.extra_args,
        ]

    def start(self, wait: bool = True) -> RouterProc:
        if not self.port:
            self.port = free_port()
        logf = open(self.log, "ab")  # noqa: SIM115 - handed to the child
        env = dict(os.environ)
        env.update(self.env or {})
        self.proc = subprocess.Popen(
            self.argv(),
            stdout=logf,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
        logf.close()
        if wait:
            self.wait_healthy()
        return self

    def wait_healthy(self, timeout: float = 30.0) -> None:
        def healthy() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama-server exited {self.proc.returncode}:\n{self.log_tail()}")
            try:
                return httpx.get(self.url + "/health", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for_sync(healthy, timeout, what="llama-server healthy", step=0.1, explain=self.log_tail)

    def log_tail(self, n: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except FileNotFoundError:
            return ""

    def stop(self) -> None:
        """Stop by pid: SIGTERM to the router's process group (the children too), then SIGKILL."""
        if self.proc is None or self.proc.poll() is not None:
            return
        pgid = self.proc.pid
        try:
            os.killpg(pgid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(pgid, signal.SIGKILL)
            self.proc.wait(timeout=5)
        # children of the router share its process group; make sure none outlive it
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)

    def kill9(self) -> None:
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=5)

    def wait_model(self, model: str, states: set[str], timeout: float = 30.0) -> dict[str, object]:
        last: dict[str, object] = {}

        def reached() -> bool:
            for m in httpx.get(self.url + "/models", timeout=5, headers=self._auth()).json()["data"]:
                if m["id"] == model:
                    last.clear()
                    last.update(m)
            return bool(last) and last["status"]["value"] in states  # type: ignore[index]

        wait_for_sync(reached, timeout, what=f"{model} in {states}", step=0.1, explain=lambda: f"last: {last}")
        return dict(last)

    def _auth(self) -> dict[str, str]:
        key = (self.env or {}).get("TEST_ROUTER_KEY")
        return {"Authorization": f"Bearer {key}"} if key else {}
