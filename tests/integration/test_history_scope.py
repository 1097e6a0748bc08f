"""History kept by the router's identity, not the machine's name in a config (issue 38, case 1): after the demo, a
config whose local machine was also called `workstation` showed the demo router's evictions on its own row, and
`history` listed the demo's machines too."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers.herd import Herd, local_config


def history(herd: Herd, cfg: Path, *args: str) -> list[dict[str, str]]:
    r = subprocess.run(
        [sys.executable, "-m", "app", "--config", str(cfg), "history", "--json", *args],
        capture_output=True, text=True, timeout=60, env=herd.env,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in r.stdout.splitlines()]


def test_two_names_for_one_router_share_its_history_and_one_name_for_two_routers_does_not(herd: Herd) -> None:
    preset = herd.root / "models.ini"
    # the fixture's config: machine "here", the local router "default"
    same_router = herd.root / "renamed.toml"  # the same router, named "workstation"
    same_router.write_text(local_config("workstation", preset))
    same_name = herd.root / "other.toml"  # another router on this machine, also named "here"
    same_name.write_text(local_config("here", preset, router="other"))

    for args in (("start", "here"), ("load", "here", "alpha", "--wait"), ("unload", "here", "alpha")):
        r = herd.run(*args)
        assert r.returncode == 0, r.stderr
    herd_rows = [g for g in history(herd, herd.config) if g["model"] == "alpha"]
    assert {g["to"] for g in herd_rows} >= {"loaded", "unloaded"}
    assert {g["machine"] for g in herd_rows} == {"here"}

    # one router, two names: the other config reads the same rows, under its own name, filter included
    renamed = [g for g in history(herd, same_router, "workstation") if g["model"] == "alpha"]
    assert [(g["time"], g["to"], g["reason"]) for g in renamed] == [
        (g["time"], g["to"], g["reason"]) for g in herd_rows
    ]
    assert {g["machine"] for g in renamed} == {"workstation"}

    # one name, two routers: the router "other" never ran a model, so nothing of "default" shows under "here"
    assert history(herd, same_name) == []
    assert history(herd, same_name, "here") == []
    # --all: every row as recorded, whichever config reads it
    assert [g for g in history(herd, same_name, "--all") if g["model"] == "alpha"] == herd_rows
