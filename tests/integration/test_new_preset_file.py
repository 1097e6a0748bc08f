"""A `preset =` file that does not exist yet (issue 38, case 5): the first start makes it (`version = 1`, a comment
saying who made it, 0600, written atomically), locally and over ssh; a file that cannot be made stops the start
before anything is spawned, saying why. Before, llama-server exited during start-up and the reason ("preset file
does not exist") was only in its log."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from tests.helpers.herd import Herd
from tests.helpers.machine_toml import machine_toml
from tests.helpers.sshd import SshServer

KINDS = ["local", *(pytest.param(k, marks=pytest.mark.ssh) for k in ("sftp", "nosftp"))]


@pytest.fixture
def servers(request: pytest.FixtureRequest) -> dict[str, SshServer]:
    kind = request.node.callspec.params.get("kind", "local")
    if kind == "local":
        return {}
    return {kind: request.getfixturevalue("sshd" if kind == "sftp" else "sshd_nosftp")}


@pytest.mark.parametrize("kind", KINDS)
def test_a_missing_preset_is_made_on_the_first_start(
    kind: str, servers: dict[str, SshServer], tmp_path: Path, llama_server: str
) -> None:
    preset = tmp_path / "not-yet" / "models.ini"  # neither the file nor its directory exists
    herd = Herd(root=tmp_path, config=tmp_path / "config.toml", extra_env={"LLAMA_SERVER": llama_server})
    herd.write_config(machine_toml(kind, preset, llama_server, servers))
    try:
        r = herd.run("start", "m")
        assert r.returncode == 0, r.stderr
        text = preset.read_text()
        assert text.startswith("version = 1\n") and "made by llamaherd" in text and "did not exist" in text
        assert stat.S_IMODE(preset.stat().st_mode) == 0o600
        assert [p.name for p in preset.parent.iterdir()] == ["models.ini"]  # no temporary file left
        assert herd.router_pids()
        # a second start adopts the router and leaves the file alone
        preset.write_text(text + "[alpha]\n")
        assert herd.run("start", "m").returncode == 0
        assert preset.read_text().endswith("[alpha]\n")
    finally:
        herd.stop_all()


def test_a_preset_that_cannot_be_made_stops_the_start_before_spawning(tmp_path: Path, llama_server: str) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    preset = blocker / "models.ini"  # its "directory" is a file: cannot be made
    herd = Herd(root=tmp_path, config=tmp_path / "config.toml", extra_env={"LLAMA_SERVER": llama_server})
    herd.write_config(machine_toml("local", preset, llama_server, {}))
    r = herd.run("start", "m")
    assert r.returncode == 1
    assert f"the preset file {preset} does not exist on m, and it could not be made" in r.stderr, r.stderr
    assert "llama-server exited" not in r.stderr
    assert herd.router_pids() == []
