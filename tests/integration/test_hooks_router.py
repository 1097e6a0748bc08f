"""Hooks against a real router: `llamaherd watch` runs a model_failed hook for a corrupt model within 5 s of the
router's event, with what happened in its environment (never its argv); a `sustain` lets a blip pass unrun and
runs once the state has held."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import httpx
import pytest
import tomli_w

from app.config import Config, MachineConfig
from app.config_hooks import HookConfig
from app.services.core.router_types import RouterState
from app.services.fleet import Fleet
from app.services.hooks.runner import HookRun, HookRunner
from app.services.machine.machine import STREAM_STABLE_AFTER
from tests.helpers.router import RouterProc
from tests.helpers.wait import wait_for, wait_for_sync

SUSTAIN = 5.0
DUMP = 'env | grep ^LLAMAHERD_ | sort > "$OUT/$LLAMAHERD_EVENT-$LLAMAHERD_MODEL"; echo "$@" > "$OUT/argv"'


def _failed(router: RouterProc) -> bool:
    listed = json.loads(urllib.request.urlopen(f"{router.url}/models", timeout=5).read())
    return any(m["id"] == "broken" and m["status"].get("failed") for m in listed["data"])


def read_env(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines())


@pytest.mark.timing
def test_watch_runs_a_model_failed_hook_with_the_fleet_in_its_environment(router: RouterProc, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    cfg = tmp_path / "config.toml"
    hook = {"on": ["model_failed"], "command": ["sh", "-c", DUMP, "hook"]}
    cfg.write_text(tomli_w.dumps({"machines": [{"name": "box", "url": router.url}], "hooks": [hook]}))
    watch = subprocess.Popen(
        [sys.executable, "-m", "app", "--config", str(cfg), "watch"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OUT": str(out)},
    )
    try:
        assert watch.stdout is not None
        assert "following 1 machine(s), 1 hook(s)" in watch.stdout.readline()
        time.sleep(1.0)  # its first look at the model list is history, not news: let it be taken
        httpx.post(f"{router.url}/models/load", json={"model": "broken"}, timeout=10).raise_for_status()
        wait_for_sync(lambda: _failed(router), 15, what="the router saying broken failed")
        t0 = time.monotonic()  # from the router's own word that it failed
        wait_for_sync(lambda: (out / "model_failed-broken").exists(), 10, what="the hook's file")
        took = time.monotonic() - t0
        assert took < 5.0, f"the hook ran {took:.1f} s after the load was refused"
        env = read_env(out / "model_failed-broken")
        assert env["LLAMAHERD_EVENT"] == "model_failed" and env["LLAMAHERD_MACHINE"] == "box"
        assert env["LLAMAHERD_MODEL"] == "broken" and env["LLAMAHERD_REASON"].startswith("exit code")
        assert env["LLAMAHERD_URL"] == router.url
        assert (out / "argv").read_text().strip() == ""  # nothing of what happened rides on its command line
        assert "hook sh for model_failed on box (broken): exit 0" in watch.stdout.readline()
    finally:
        watch.send_signal(signal.SIGTERM)
        _, err = watch.communicate(timeout=15)
    assert watch.returncode == 0, err
    assert err == ""


@pytest.mark.timing
async def test_sustain_lets_a_blip_pass_and_runs_once_the_state_holds(router: RouterProc, tmp_path: Path) -> None:
    out = tmp_path / "ran"
    hook = HookConfig(("machine_unreachable",), ("sh", "-c", f'echo "$LLAMAHERD_REASON" >> {out}'), sustain=SUSTAIN)
    fleet = Fleet(Config(machines=(MachineConfig(name="box", url=router.url),), hooks=(hook,)))
    runs: list[HookRun] = []
    runner = HookRunner((hook,), said=lambda text: None, env_of=fleet.router_env, ran=runs.append)
    await fleet.start()
    events = fleet.subscribe()
    follow = asyncio.create_task(runner.follow(events))
    try:
        up = lambda: fleet.view("box").router_state is RouterState.ATTACHED  # noqa: E731
        down = lambda: fleet.view("box").router_state is RouterState.UNREACHABLE  # noqa: E731
        await wait_for(up, timeout=15, what="attached")
        # A stream that breaks within STREAM_STABLE_AFTER of connecting is flaky: its next "attached" is held back
        # that long (machine.py), which would make any outage look longer than the blip this test needs.
        await asyncio.sleep(STREAM_STABLE_AFTER + 0.2)
        router.stop()
        await wait_for(down, timeout=5, what="unreachable")
        blip = time.monotonic()
        await asyncio.to_thread(router.start)  # off the loop: the fleet goes on following meanwhile
        fleet.retry_now("box")
        await wait_for(up, timeout=10, what="attached again")
        assert time.monotonic() - blip < SUSTAIN - 1, "the blip lasted as long as the sustain: no blip to test"
        await asyncio.sleep(SUSTAIN + 0.5 - (time.monotonic() - blip))  # past when the blip's run would be due
        assert runs == [] and not out.exists()
        router.stop()
        await wait_for(down, timeout=5, what="unreachable again")
        t0 = time.monotonic()
        await wait_for(lambda: len(runs) == 1, timeout=10, what="the sustained hook's run")
        assert SUSTAIN - 0.5 <= time.monotonic() - t0 <= SUSTAIN + 3
        assert runs[0].exit_code == 0 and out.read_text().strip()
    finally:
        follow.cancel()
        fleet.unsubscribe(events)
        await runner.close()
        await fleet.close()
