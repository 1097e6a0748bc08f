"""The preset editor against the real router: every field is accepted, reloads unload exactly the changed
models, refusals leave the file byte-identical, and it all works over ssh with and without SFTP."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from app.config import Config, MachineConfig
from app.services.core.errors import PresetError
from app.services.core.router_types import ModelState
from app.services.fleet import Fleet
from app.services.presets.fields import FIELDS, PresetField
from app.services.presets.store import PresetConflict, add_section, replace_section, set_keys
from tests.helpers.router import preset_text
from tests.helpers.sshd import SshServer


@contextlib.asynccontextmanager
async def running_fleet(cfg: MachineConfig) -> AsyncIterator[Fleet]:
    fleet = Fleet(Config(machines=(cfg,)))
    try:
        await fleet.start_router(cfg.name)
        yield fleet
    finally:
        with contextlib.suppress(Exception):
            await fleet.stop_router(cfg.name)
        await fleet.close()


@pytest.fixture
def local_cfg(tmp_path: Path, tiny_models: dict[str, Path], llama_server: str,
              monkeypatch: pytest.MonkeyPatch) -> MachineConfig:  # fmt: skip
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    preset = tmp_path / "models.ini"
    preset.write_text(preset_text(dict(tiny_models)))
    return MachineConfig(name="here", preset=str(preset), program=llama_server, models_max=2)


def sample(field: PresetField, tiny: dict[str, Path]) -> str:
    if field.key == "alias":
        return "alpha-one, a1"
    if field.key == "tags":
        return "small, test"
    if field.key == "chat-template":
        return "chatml"
    if field.key == "spec-type":
        return "off"
    if field.kind == "bool":
        return "true"
    if field.kind == "choice":
        return field.choices[0]
    if field.kind == "path":
        return str(tiny["alpha"])
    lo = field.min if field.min is not None and field.min > 0 else 1
    return str(lo if lo not in field.excluded else lo + 1)


def shown(entry: dict[str, object], key: str) -> bool:
    if key == "alias":
        return "a1" in entry["aliases"]  # type: ignore[operator]
    if key == "tags":
        return "small" in entry["tags"]  # type: ignore[operator]
    preset = entry["status"]["preset"]  # type: ignore[index]
    stem = {"spec-type": "spec-type", "load-on-startup": "load-on-startup"}.get(key, key)
    return re.search(rf"^{re.escape(stem)}\s*=", preset, re.M) is not None


async def test_router_accepts_every_field(local_cfg: MachineConfig, tiny_models: dict[str, Path]) -> None:
    async with running_fleet(local_cfg) as fleet:
        known = await fleet.preset_known_keys("here")
        url = (await fleet.client("here")).base_url
        manager = fleet.machine("here").manager
        assert manager is not None
        auth = {"Authorization": f"Bearer {await manager.read_key()}"}  # the router's own key, as any adopter reads it
        for field in FIELDS:
            if field.key == "model":
                continue
            value = sample(field, tiny_models)
            store = fleet.presets("here")
            result = await store.edit(set_keys("alpha", {field.key: value}, known))
            assert result.written and result.reloaded, field.key
            r = httpx.get(url + "/models", params={"reload": "1"}, headers=auth, timeout=30)
            assert r.status_code == 200, (field.key, r.text)
            entry = next(e for e in r.json()["data"] if e["id"] == "alpha")
            assert shown(entry, field.key), (field.key, value, entry["status"].get("preset"))


async def test_reload_unloads_only_the_edited_model(local_cfg: MachineConfig) -> None:
    async with running_fleet(local_cfg) as fleet:
        await fleet.load_and_wait("here", "alpha", timeout=60)
        await fleet.load_and_wait("here", "beta", timeout=60)
        known = await fleet.preset_known_keys("here")
        store = fleet.presets("here")
        plan = await store.plan(set_keys("alpha", {"ctx-size": "128"}, known))
        assert plan.will_unload == ("alpha",)
        result = await store.apply(plan)
        assert result.reloaded and result.backup and Path(result.backup).exists()
        models = {m.id: m.state for m in await (await fleet.client("here")).models()}
        assert models["alpha"] is ModelState.UNLOADED and models["beta"] is ModelState.LOADED
        # writing identical text: no write, no reload, beta untouched
        same = await store.plan(set_keys("alpha", {"ctx-size": "128"}, known))
        assert same.no_change
        again = await store.apply(same)
        assert not again.written and not again.reloaded


async def test_refusals_leave_the_file_byte_identical(local_cfg: MachineConfig) -> None:
    assert local_cfg.preset is not None
    path = Path(local_cfg.preset)
    before = path.read_bytes()
    async with running_fleet(local_cfg) as fleet:
        known = await fleet.preset_known_keys("here")
        store = fleet.presets("here")
        for bad in ("a;b", "a#b", "a\nb", "a\rb"):
            with pytest.raises(PresetError) as e:
                await store.edit(set_keys("alpha", {"chat-template": bad}, known))
            assert "chat-template" in str(e.value) or "Chat template" in str(e.value)
        with pytest.raises(PresetError) as e:
            await store.edit(set_keys("alpha", {"no-such-option": "1"}, known))
        assert "no-such-option" in str(e.value)
        with pytest.raises(PresetError) as e:
            await store.edit(add_section("bad]name", {"model": "/x.gguf"}, known))
        assert "]" in str(e.value)
        assert path.read_bytes() == before
        # a file changed on disk since it was read is not overwritten; the message shows it against the edit
        snap = await store.read()
        plan = await store.plan(replace_section("beta", {"model": "/elsewhere.gguf"}, known), snap)
        path.write_text(before.decode() + "\n; an operator's edit\n")
        changed = path.read_bytes()
        with pytest.raises(PresetConflict) as c:
            await store.apply(plan)
        assert "(on disk now)" in c.value.diff and "(your edit)" in c.value.diff
        assert "-; an operator's edit" in c.value.diff and "+model = /elsewhere.gguf" in c.value.diff
        assert path.read_bytes() == changed
    assert not any(p.name.startswith("models.ini.bak-") for p in path.parent.iterdir())


async def test_backups_keep_the_last_five(local_cfg: MachineConfig) -> None:
    async with running_fleet(local_cfg) as fleet:
        known = await fleet.preset_known_keys("here")
        for n in range(7):
            await fleet.presets("here").edit(set_keys("beta", {"threads": str(n + 1)}, known))
    assert local_cfg.preset is not None
    backups = sorted(p for p in Path(local_cfg.preset).parent.iterdir() if p.name.startswith("models.ini.bak-"))
    assert len(backups) == 5
    assert all(os.stat(b).st_mode & 0o777 == 0o600 for b in backups)


async def test_edit_backup_reload_over_ssh(any_sshd: SshServer, tmp_path: Path, tiny_models: dict[str, Path],
                                           llama_server: str) -> None:  # fmt: skip
    server = any_sshd
    preset = tmp_path / "remote models.ini"
    preset.write_text(preset_text(dict(tiny_models)))
    cfg = MachineConfig(
        name="far", host=server.host, port=server.port, user=server.user, identity_file=server.client_key,
        known_hosts=server.known_hosts, router=f"p-{tmp_path.name}", program=llama_server, preset=str(preset),
    )  # fmt: skip
    async with running_fleet(cfg) as fleet:
        await fleet.load_and_wait("far", "beta", timeout=60)
        known = await fleet.preset_known_keys("far")
        result = await fleet.presets("far").edit(set_keys("alpha", {"ctx-size": "192"}, known))
        assert result.written and result.reloaded and result.backup
        assert Path(result.backup).read_text() == preset_text(dict(tiny_models))
        entry = {m.id: m for m in await (await fleet.client("far")).models()}
        assert "ctx-size = 192" in entry["alpha"].preset and entry["beta"].state is ModelState.LOADED
    assert "ctx-size = 192" in preset.read_text()
