"""`llamaherd preset ...` as a user types it, against a real router started by `llamaherd start`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers.herd import Herd

# Its herd overrides conftest's, which takes llama_server: pytest's closure does not say so, the marker does.
pytestmark = pytest.mark.llama_server


@pytest.fixture
def herd(herd: Herd) -> Herd:
    """The shared herd (conftest), with its router started."""
    assert herd.run("start", "here").returncode == 0
    return herd


def test_show_set_unset_remove(herd: Herd, tmp_path: Path) -> None:
    preset = tmp_path / "models.ini"
    r = herd.run("preset", "show", "here", "alpha")
    assert r.returncode == 0 and r.stdout.startswith("[alpha]\nmodel = ")
    before = preset.read_bytes()
    r = herd.run("preset", "set", "here", "alpha", "ctx-size=128", "--dry-run")
    assert r.returncode == 0 and "+ctx-size = 128" in r.stdout and "dry run" in r.stdout
    assert preset.read_bytes() == before
    assert herd.run("load", "here", "alpha", "--wait").returncode == 0
    r = herd.run("preset", "set", "here", "alpha", "ctx-size=128")
    assert r.returncode == 0, r.stderr
    assert "reload will unload: alpha" in r.stdout and "router reloaded" in r.stdout and "backup" in r.stdout
    assert "ctx-size = 128" in preset.read_text()
    r = herd.run("preset", "set", "here", "alpha", "ctx-size=128")
    assert "nothing to change" in r.stdout
    r = herd.run("preset", "unset", "here", "alpha", "ctx-size")
    assert r.returncode == 0 and "-ctx-size = 128" in r.stdout
    r = herd.run("preset", "remove", "here", "broken")
    assert r.returncode == 0 and "-[broken]" in r.stdout
    assert "[broken]" not in preset.read_text()
    models = herd.run("models", "here").stdout
    assert "broken" not in models and "alpha" in models


def test_refusals_exit_nonzero_and_change_nothing(herd: Herd, tmp_path: Path) -> None:
    preset = tmp_path / "models.ini"
    before = preset.read_bytes()
    # bad input exits 2, as a usage error does elsewhere (issue 38, case 8: `;` was refused with 1)
    for args, words, code in [
        (("set", "here", "alpha", "chat-template=a;b"), "line break", 2),
        (("set", "here", "alpha", "mmap=1"), "mmap", 2),
        (("set", "here", "alpha", "ctx-size=big"), "ctx-size", 2),
        (("set", "here", "alpha", "nonsense"), "key=value", 2),
        (("set", "here", "chat small;x", "ctx-size=64"), "cannot contain ' ', ';'", 2),
        (("remove", "here", "nope"), "no section [nope]", 1),
    ]:
        r = herd.run("preset", *args)
        assert r.returncode == code, (args, r.stdout, r.stderr)
        assert words in r.stderr, (args, r.stderr)
    assert preset.read_bytes() == before


def test_add_a_model_with_its_projector(herd: Herd, tmp_path: Path, tiny_models: dict[str, Path]) -> None:
    d = tmp_path / "lib" / "gamma"
    d.mkdir(parents=True)
    shutil.copy(tiny_models["beta"], d / "gamma-Q8_0.gguf")
    shutil.copy(tiny_models["alpha"], d / "mmproj-gamma-f16.gguf")
    r = herd.run("preset", "add", "here", str(d), "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "+[gamma]" in r.stdout and f"+model = {d / 'gamma-Q8_0.gguf'}" in r.stdout
    assert f"+mmproj = {d / 'mmproj-gamma-f16.gguf'}" in r.stdout and "+parallel = 1" in r.stdout
    r = herd.run("preset", "add", "here", str(d / "mmproj-gamma-f16.gguf"))
    assert r.returncode == 2 and "projector" in r.stderr
    r = herd.run("preset", "add", "here", str(d / "gamma-Q8_0.gguf"), "--name", "g8")
    assert r.returncode == 0, r.stderr
    assert "g8" in herd.run("models", "here").stdout
