"""Each save from the dashboard (plan, show, then write) keeps only the newest backups (issue 38, case 8: every
save left another `models.ini.bak-<time>`), locally and over ssh, older-named backups included."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.config import Config, parse_config
from app.services.fleet import Fleet
from app.services.presets.store import BACKUPS_KEPT, set_keys
from tests.helpers.machine_toml import machine_toml
from tests.helpers.router import preset_text
from tests.helpers.sshd import SshServer

KINDS = ["local", *(pytest.param(k, marks=pytest.mark.ssh) for k in ("sftp", "nosftp"))]


@pytest.fixture
def servers(request: pytest.FixtureRequest) -> dict[str, SshServer]:
    kind = request.node.callspec.params.get("kind", "local")
    if kind == "local":
        return {}
    return {kind: request.getfixturevalue("sshd" if kind == "sftp" else "sshd_nosftp")}


@pytest.mark.parametrize("kind", KINDS)
async def test_dashboard_saves_keep_the_newest_backups(
    kind: str, servers: dict[str, SshServer], tmp_path: Path, tiny_models: dict[str, Path], llama_server: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    preset = tmp_path / "models.ini"
    preset.write_text(preset_text(dict(tiny_models)))
    old = tmp_path / "models.ini.bak-20250101-000000"  # named as an older llamaherd named them, without ms
    old.write_text("old\n")
    cfg = parse_config(machine_toml(kind, preset, llama_server, servers), tmp_path / "c.toml")
    fleet = Fleet(Config(machines=cfg.machines))
    try:
        known = await fleet.preset_known_keys("m")
        for n in range(BACKUPS_KEPT + 3):
            plan = await fleet.plan_preset("m", set_keys("beta", {"threads": str(n + 1)}, known))
            result = await fleet.apply_preset("m", plan)  # as the dashboard does: a plan shown, then written
            assert result.written and result.backup
    finally:
        await fleet.close()
    backups = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("models.ini.bak-"))
    assert len(backups) == BACKUPS_KEPT, backups
    assert old.name not in backups
