"""Each loaded model's memory through a real ssh connection (OpenSSH sshd on 127.0.0.1): the probe of the router's
children runs on the far side through the machine's transport, and `status --json` carries its RSS as /proc has
it (sshd is on this host, so psutil can check it)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.helpers.herd import Herd
from tests.helpers.router import preset_text
from tests.helpers.sshd import SshServer
from tests.integration.test_lifecycle_ssh import ssh_machine, toml_for


@pytest.fixture
def far(tmp_path: Path, tiny_models: dict[str, Path], any_sshd: SshServer, llama_server: str) -> Iterator[Herd]:
    (tmp_path / "remote models.ini").write_text(preset_text(dict(tiny_models)))
    h = Herd(root=tmp_path, config=tmp_path / "config.toml")
    h.write_config(toml_for(ssh_machine(any_sshd, "far", tmp_path, llama_server)))
    yield h
    h.stop_all()  # the router it started, by pid


def test_a_remote_models_rss_over_ssh(far: Herd) -> None:
    assert far.run("start", "far").returncode == 0
    r = far.run("load", "far", "alpha", "--wait")
    assert r.returncode == 0, r.stderr
    r = far.run("status", "--json")
    assert r.returncode == 0, r.stderr
    (st,) = json.loads(r.stdout)
    alpha = next(m for m in st["models"] if m["id"] == "alpha")
    child = next(c for c in psutil.Process(st["pid"]).children() if "alpha" in c.cmdline())
    rss = child.memory_info().rss
    assert alpha["rss"] is not None and abs(alpha["rss"] - rss) <= 0.05 * rss, (alpha, rss)
    assert alpha["memory_unknown"] == "" and alpha["gpu_memory"] is None  # no nvidia-smi on the far side
