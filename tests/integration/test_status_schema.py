"""`status --json` is a stable schema (issue 38, case 8): every key in every machine's object, models listed; an
unreachable ssh machine used to leave out `router` (a script hit KeyError). `models` and the dashboard agree on ctx."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import psutil
import pytest

from app.cli.status_schema import STATUS_KEYS
from app.services.machine.model_memory import ATTACHED
from tests.helpers.herd import Herd
from tests.helpers.router import RouterProc
from tests.integration.test_cli_router import herd


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_every_key_for_every_machine_with_the_models(router: RouterProc, tmp_path: Path) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text(
        f'[[machines]]\nname = "box"\nurl = "{router.url}"\n\n'
        f'[[machines]]\nname = "far"\nhost = "127.0.0.1"\nport = {closed_port()}\n'
        f'known_hosts = "{tmp_path / "known_hosts"}"\n'
    )
    r = herd(cfg, "status", "--json")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert [list(s) for s in got] == [list(STATUS_KEYS)] * 2  # every key, in one order
    box, far = got
    assert far["router"] == "unknown" and far["connection"] == "unreachable" and far["reason"]
    assert far["models"] == [] and far["pid"] is None
    assert box["router"] == "attached" and box["models_known"] == 3
    models = {m["id"]: m for m in box["models"]}
    assert set(models) == {"alpha", "beta", "broken"}
    assert models["alpha"] == {
        "id": "alpha", "state": "unloaded", "ctx": 256, "exit_code": None, "failed": False,
        "rss": None, "gpu_memory": None, "memory_unknown": "",
    }  # fmt: skip

    # the context size the preset gives an unloaded model, as the dashboard shows it (was `-`)
    table = herd(cfg, "models", "box").stdout.splitlines()
    alpha = next(line.split() for line in table if line.startswith("alpha"))
    assert alpha[:3] == ["alpha", "unloaded", "256"]


@pytest.fixture
def herd_here(herd: Herd) -> Herd:
    """The conftest's `herd` (a machine "here" llamaherd manages), under another name: `herd` is a function here."""
    return herd


def test_each_loaded_models_memory(herd_here: Herd, router: RouterProc, tmp_path: Path) -> None:
    """A managed router's loaded model: its child's RSS as /proc has it (within 5 %), GPU memory null without
    nvidia-smi. An attached router's loaded model: null, and why."""
    h = herd_here
    h.write_config(h.config.read_text() + f'\n[[machines]]\nname = "box"\nurl = "{router.url}"\n')
    assert h.run("start", "here").returncode == 0
    for machine in ("here", "box"):
        r = h.run("load", machine, "alpha", "--wait")
        assert r.returncode == 0, r.stderr
    r = h.run("status", "--json")
    assert r.returncode == 0, r.stderr
    here, box = json.loads(r.stdout)
    alpha = next(m for m in here["models"] if m["id"] == "alpha")
    child = next(
        c for c in psutil.Process(here["pid"]).children() if "alpha" in c.cmdline() and "--alias" in c.cmdline()
    )
    assert alpha["rss"] > 0 and abs(alpha["rss"] - child.memory_info().rss) <= 0.05 * child.memory_info().rss
    assert alpha["gpu_memory"] is None and alpha["memory_unknown"] == ""
    beta = next(m for m in here["models"] if m["id"] == "beta")
    assert beta["rss"] is None and beta["memory_unknown"] == ""  # not running: nothing to measure, nothing to say
    attached = next(m for m in box["models"] if m["id"] == "alpha")
    assert attached["state"] == "loaded" and attached["rss"] is None and attached["memory_unknown"] == ATTACHED
