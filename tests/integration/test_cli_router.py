"""The headless commands, run as a user runs them (a real process), against a real router."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import RouterFactory
from tests.helpers.router import RouterProc


def write_config(tmp_path: Path, url: str, api_key_env: str | None = None) -> Path:
    cfg = tmp_path / "config.toml"
    extra = f'api_key_env = "{api_key_env}"\n' if api_key_env else ""
    cfg.write_text(f'[[machines]]\nname = "box"\nurl = "{url}"\n{extra}')
    return cfg


def herd(
    cfg: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", "--config", str(cfg), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def test_models_load_wait_unload(router: RouterProc, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, router.url)
    r = herd(cfg, "models", "box")
    assert r.returncode == 0, r.stderr
    assert "alpha" in r.stdout and "unloaded" in r.stdout
    r = herd(cfg, "load", "box", "alpha", "--wait")
    assert r.returncode == 0, r.stderr
    assert "alpha: loaded" in r.stdout
    listed = {m["id"]: m for m in json.loads(herd(cfg, "models", "box", "--json").stdout)}
    assert listed["alpha"]["state"] == "loaded" and listed["alpha"]["n_ctx"] == 256
    r = herd(cfg, "unload", "box", "alpha")
    assert r.returncode == 0
    router.wait_model("alpha", {"unloaded"})


@pytest.mark.timing
def test_load_wait_corrupt_exits_1_within_5s(router: RouterProc, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, router.url)
    t0 = time.monotonic()
    r = herd(cfg, "load", "box", "broken", "--wait")
    took = time.monotonic() - t0
    assert r.returncode == 1
    assert "broken failed to load" in r.stderr and "exit code 1" in r.stderr
    assert took < 5, took


def test_unknown_model_and_unknown_machine(router: RouterProc, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, router.url)
    r = herd(cfg, "load", "box", "nope")
    assert r.returncode == 1 and "404" in r.stderr and "no model named 'nope'" in r.stderr
    r = herd(cfg, "models", "elsewhere")
    assert r.returncode == 2 and "no machine named 'elsewhere'" in r.stderr


def test_bad_config_exits_2_naming_the_key(tmp_path: Path) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text('[[machines]]\nname = "a"\nmodles_max = 1\n')
    r = herd(cfg, "models", "a")
    assert r.returncode == 2 and "config.toml:3" in r.stderr and "'modles_max'" in r.stderr


def test_api_key_refused_then_accepted(make_router: RouterFactory, tmp_path: Path) -> None:
    rt = make_router(extra_args=["--api-key", "k3y"], env={"TEST_ROUTER_KEY": "k3y"})
    cfg = write_config(tmp_path, rt.url, api_key_env="HERD_KEY")
    r = herd(cfg, "models", "box", env={"HERD_KEY": ""})
    assert r.returncode == 1 and "API key refused" in r.stderr
    r = herd(cfg, "models", "box", env={"HERD_KEY": "k3y"})
    assert r.returncode == 0 and "alpha" in r.stdout
    proc = subprocess.Popen(
        [sys.executable, "-m", "app", "--config", str(cfg), "events", "box"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "HERD_KEY": "k3y"},
    )
    try:
        assert proc.stdout is not None
        first = json.loads(proc.stdout.readline())
        assert first == {"event": "stream_state", "model": "", "state": "connected", "reason": "", "retry_in": None}
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)


def test_events_prints_json_lines_across_a_restart(router: RouterProc, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, router.url)
    proc = subprocess.Popen(
        [sys.executable, "-m", "app", "--config", str(cfg), "events", "box"], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    try:

        def read_until(pred: object) -> dict[str, object]:
            while True:
                line = proc.stdout.readline()  # type: ignore[union-attr]
                assert line, "events ended"
                ev = json.loads(line)
                if pred(ev):  # type: ignore[operator]
                    return dict(ev)

        read_until(lambda e: e["event"] == "models")
        router.stop()
        read_until(lambda e: e["event"] == "stream_state" and e["state"] == "disconnected")
        router.start()
        read_until(lambda e: e["event"] == "models")
        assert herd(cfg, "load", "box", "alpha").returncode == 0
        loading = read_until(lambda e: e["event"] == "model_status")
        assert loading == {"event": "model_status", "model": "alpha", "status": "loading"}
        loaded = read_until(lambda e: e.get("status") == "loaded")
        assert loaded["model"] == "alpha" and loaded["meta"]["n_ctx"] == 256  # type: ignore[index]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)
