"""Every command the README shows is run here (or by .ci/run, or by the tmux demo test), so it cannot go stale."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.demo import prepare_and_start, stop_routers

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def shell_lines() -> list[str]:
    blocks = re.findall(r"```sh\n(.*?)```", README, re.S)
    return [ln.strip() for b in blocks for ln in b.splitlines() if ln.strip() and not ln.startswith("#")]


def test_setup_commands_are_the_two_make_targets() -> None:
    first_block = re.search(r"```sh\n(.*?)```", README, re.S)
    assert first_block is not None
    cmds = [ln.split("#")[0].strip() for ln in first_block.group(1).splitlines() if ln.strip()]
    assert cmds == ["make demo", "make test"]
    assert "\nmake test\n" in (ROOT / ".ci" / "run").read_text()  # CI runs exactly the README's test command
    assert "README" in (ROOT / "tests" / "ui" / "test_demo_tmux.py").read_text()  # and a test runs `make demo`


@pytest.fixture
def demo_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, llama_server: str) -> Iterator[Path]:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.delenv("LLAMAHERD_CONFIG", raising=False)
    monkeypatch.setenv("LLAMA_SERVER", llama_server)
    config, started = asyncio.run(prepare_and_start())
    assert len(started) == 3
    try:
        yield tmp_path
    finally:
        asyncio.run(stop_routers(config, started))


def test_every_headless_command_in_the_readme_runs(demo_home: Path) -> None:
    lines = [ln for ln in shell_lines() if ln.startswith(("llamaherd", "export", "curl"))]
    assert len(lines) >= 8 and any(ln.startswith("curl") for ln in lines)
    env = dict(os.environ)
    for line in lines:
        cmd = re.sub(r"(^|\$\()llamaherd ", rf"\1{sys.executable} -m app ", line.split("  #")[0].strip())
        if "PORT" in cmd:  # the router's port, as `status` shows it
            st = subprocess.run([sys.executable, "-m", "app", "status", "--json"], capture_output=True, text=True,
                                env=env, cwd=ROOT, timeout=120)  # fmt: skip
            port = next(m["port"] for m in json.loads(st.stdout) if m["machine"] in cmd)
            cmd = cmd.replace("PORT", str(port))
        if line.startswith("export"):
            name, _, value = cmd.removeprefix("export ").partition("=")
            env[name] = os.path.expanduser(value.replace("~", str(demo_home), 1))
            continue
        if " events " in cmd:
            p = subprocess.Popen(["bash", "-c", cmd], stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)
            assert p.stdout is not None
            first = p.stdout.readline()
            p.terminate()
            p.wait(10)
            assert '"state":"connected"' in first, first
            continue
        r = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
        assert r.returncode == 0, (line, r.stdout, r.stderr)
        assert r.stdout.strip(), line
        if line.startswith("curl"):
            assert "chat-small" in r.stdout, (line, r.stdout)
