"""Which config file a command reads, and what happens when it is not there: a file named by --config or
$LLAMAHERD_CONFIG must exist (exit 2, naming it); only the default path may be absent (the first run)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app.config import load_config
from app.errors import ConfigError


def llamaherd(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    root = Path(__file__).resolve().parents[2]
    full = {**os.environ, "PYTHONPATH": str(root), **env}
    return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True, timeout=60,
                          env=full, cwd=cwd)  # fmt: skip


@pytest.fixture
def xdg(tmp_path: Path) -> dict[str, str]:
    """A home of the test's own: no default config, no router records."""
    return {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "XDG_STATE_HOME": str(tmp_path / "state"), "LLAMAHERD_CONFIG": ""}


@pytest.mark.parametrize("command", [(), ("status",), ("models", "local")])
def test_a_missing_file_named_by_config_is_exit_2_naming_it(tmp_path: Path, xdg: dict[str, str],
                                                            command: tuple[str, ...]) -> None:  # fmt: skip
    r = llamaherd("--config", "nope.toml", *command, env=xdg, cwd=tmp_path)
    assert r.returncode == 2, r
    assert r.stderr.strip() == "llamaherd: nope.toml: no such config file (named by --config)"
    assert r.stdout == ""


def test_a_missing_file_named_by_the_environment_is_exit_2_naming_it(tmp_path: Path, xdg: dict[str, str]) -> None:
    r = llamaherd("status", env={**xdg, "LLAMAHERD_CONFIG": str(tmp_path / "nope.toml")}, cwd=tmp_path)
    assert r.returncode == 2, r
    assert r.stderr.strip() == f"llamaherd: {tmp_path / 'nope.toml'}: no such config file (named by $LLAMAHERD_CONFIG)"


def test_the_default_path_may_be_absent(tmp_path: Path, xdg: dict[str, str]) -> None:
    r = llamaherd("status", env=xdg, cwd=tmp_path)
    assert r.returncode == 0, r
    assert r.stdout.startswith("local ") and "no router has been started here" in r.stdout


def test_load_config_refuses_a_named_missing_file_only(tmp_path: Path) -> None:
    assert load_config(tmp_path / "config.toml").machines == ()
    with pytest.raises(ConfigError, match=r"nope\.toml: no such config file \(named by --config\)"):
        load_config(tmp_path / "nope.toml", named_by="--config")
    (tmp_path / "named.toml").write_text('[[machines]]\nname = "a"\n')
    assert [m.name for m in load_config(tmp_path / "named.toml", named_by="--config").machines] == ["a"]


def test_config_example_prints_the_shipped_example(tmp_path: Path, xdg: dict[str, str]) -> None:
    root = Path(__file__).resolve().parents[2]
    r = llamaherd("config", "example", env={**xdg, "LLAMAHERD_CONFIG": str(tmp_path / "nope.toml")}, cwd=tmp_path)
    assert r.returncode == 0, r  # needs no config of its own: it is how one gets one
    assert r.stdout == (root / "app" / "config.example.toml").read_text()
    saved = tmp_path / "config.toml"
    saved.write_text(r.stdout)
    assert [m.name for m in load_config(saved).machines] == ["workstation", "gpu-box", "shared-router"]


def test_the_example_is_package_data(tmp_path: Path) -> None:
    """A pip-installed user has no checkout: the example must be package data. setuptools' build_py (what a wheel
    is made of) on a copy of the source, offline."""
    pytest.importorskip("setuptools", reason="building the package offline needs setuptools in this environment")
    root = Path(__file__).resolve().parents[2]
    src = tmp_path / "src"
    shutil.copytree(root / "app", src / "app", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(root / name, src / name)
    build = [sys.executable, "-c", "from setuptools import setup; setup()", "-q", "build_py", "--build-lib"]
    r = subprocess.run([*build, str(tmp_path / "lib")], capture_output=True, text=True, timeout=120, cwd=src)
    assert r.returncode == 0, r.stderr
    shipped = tmp_path / "lib" / "app" / "config.example.toml"
    assert shipped.read_text() == (root / "app" / "config.example.toml").read_text()
    assert (tmp_path / "lib" / "app" / "ui" / "app.tcss").exists()  # the check sees package data at all
