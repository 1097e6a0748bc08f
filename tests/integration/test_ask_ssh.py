"""Ask and probe a router on a "remote" machine (the fixture sshd): through the tunnel, with the router's key."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.helpers.herd import Herd
from tests.helpers.router import preset_text
from tests.helpers.sshd import SshServer
from tests.integration.test_lifecycle_ssh import ssh_machine, toml_for


@pytest.fixture
def far(tmp_path: Path, tiny_models: dict[str, Path], sshd: SshServer, llama_server: str) -> Iterator[Herd]:
    (tmp_path / "remote models.ini").write_text(preset_text(dict(tiny_models)))
    h = Herd(root=tmp_path, config=tmp_path / "config.toml")
    h.write_config(toml_for(ssh_machine(sshd, "far", tmp_path, llama_server)))
    yield h
    h.stop_all()


def test_ask_and_probe_over_ssh(far: Herd) -> None:
    assert far.run("start", "far").returncode == 0
    r = far.run("ask", "far", "alpha", "hello", "--max-tokens", "8", "--json", "--load")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["text"] and all(out[k] > 0 for k in ("ttft_ms", "tokens_per_s", "prompt_tokens", "completion_tokens"))
    r = far.run("probe", "far")
    assert r.returncode == 0 and "alpha: answering" in r.stdout, r.stdout + r.stderr
    (router,) = far.router_pids()
    child = next(p for p in psutil.Process(router).children() if "alpha" in " ".join(p.cmdline()))
    os.kill(child.pid, signal.SIGSTOP)
    try:
        r = far.run("probe", "far", "--json")
        assert r.returncode == 1, r.stdout + r.stderr
        (seen,) = json.loads(r.stdout)
        assert seen["model"] == "alpha" and not seen["answering"] and "not answering" in seen["reason"]
    finally:
        os.kill(child.pid, signal.SIGCONT)
    assert far.run("probe", "far", "alpha").returncode == 0
