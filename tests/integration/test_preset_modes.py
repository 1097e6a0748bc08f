"""A preset keeps its mode through an edit; a new one is 0644 unless its directory is private; backups 0600.
Locally and over ssh (no router needed: the file is edited with the router stopped). Issue 10."""

from __future__ import annotations

import dataclasses
import os
import stat
from pathlib import Path

import pytest

from app.config import MachineConfig
from app.services.machine.machine import Machine
from app.services.presets.store import PresetStore, set_keys
from tests.helpers.sshd import SshServer
from tests.integration.test_lifecycle_ssh import ssh_machine


def mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


@pytest.fixture(params=["local", pytest.param("ssh", marks=pytest.mark.ssh)])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> MachineConfig:
    if request.param == "local":
        return MachineConfig(name="here", router=f"t-{tmp_path.name}", program="/bin/false")
    server: SshServer = request.getfixturevalue("sshd")
    return ssh_machine(server, "far", tmp_path, "/bin/false")


async def edit(cfg: MachineConfig, preset: Path) -> None:
    m = Machine(dataclasses.replace(cfg, preset=str(preset)), emit=lambda ev: None)
    try:
        await m.transport.connect()
        res = await PresetStore(m).edit(set_keys("alpha", {"ctx-size": "128"}, None))
        assert res.written
    finally:
        await m.close()


@pytest.mark.parametrize("was", [0o644, 0o640, 0o600])
async def test_an_edit_keeps_the_mode_and_backups_are_private(where: MachineConfig, tmp_path: Path, was: int) -> None:
    preset = tmp_path / "models.ini"
    preset.write_text("[alpha]\nmodel = /m/alpha.gguf\n")
    os.chmod(preset, was)
    await edit(where, preset)
    assert "ctx-size = 128" in preset.read_text()
    assert mode(preset) == was
    backups = list(tmp_path.glob("models.ini.bak-*"))
    assert backups and all(mode(b) == 0o600 for b in backups)


@pytest.mark.parametrize(("folder", "want"), [(0o755, 0o644), (0o750, 0o640), (0o700, 0o600)])
async def test_a_new_preset_follows_its_directory(where: MachineConfig, tmp_path: Path, folder: int, want: int) -> None:
    d = tmp_path / "presets"
    d.mkdir()
    os.chmod(d, folder)
    preset = d / "models.ini"
    await edit(where, preset)
    assert mode(preset) == want
