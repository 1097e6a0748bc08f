"""`status --json` is a stable schema (issue 38, case 8): every key in every machine's object, models listed; an
unreachable ssh machine used to leave out `router` (a script hit KeyError). `models` and the dashboard agree on ctx."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from app.cli.status_schema import STATUS_KEYS
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
    assert models["alpha"] == {"id": "alpha", "state": "unloaded", "ctx": 256, "exit_code": None, "failed": False}

    # the context size the preset gives an unloaded model, as the dashboard shows it (was `-`)
    table = herd(cfg, "models", "box").stdout.splitlines()
    alpha = next(line.split() for line in table if line.startswith("alpha"))
    assert alpha[:3] == ["alpha", "unloaded", "256"]
