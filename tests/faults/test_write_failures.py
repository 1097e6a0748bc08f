"""A preset under a full disk, a read-only mount, a directory the user may not write, a directory that vanished:
locally, over SFTP and over the base64 path (ssh without SFTP), `llamaherd preset set` ends with one line naming
the file and the cause, exit status 1, the preset byte-identical and no temporary file left; the dashboard's
preset editor shows the message and stays up."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import Input

from app.config import Config, MachineConfig
from app.services.core.errors import HerdError
from app.services.fleet import Fleet
from app.services.machine.machine import Machine
from app.services.presets.store import PresetStore, set_keys
from tests.helpers.herd import Herd
from tests.helpers.machine_toml import machine_toml
from tests.helpers.needs import missing
from tests.helpers.screen import screen_text
from tests.helpers.sshd import SshServer
from tests.helpers.tmpfs import fill, leftovers, read_only, tmpfs
from tests.helpers.wait import wait_for

START = "[*]\nparallel = 1\n\n[alpha]\nmodel = /models/alpha.gguf\n"
# over ssh, a kind picks its sshd with request.getfixturevalue (the `servers` fixture): the param carries the marker
KINDS = ["local", *(pytest.param(k, marks=pytest.mark.ssh) for k in ("sftp", "nosftp"))]
SECOND_USER = "llamaherd-t2"


@pytest.fixture
def servers(request: pytest.FixtureRequest) -> dict[str, SshServer]:
    kind = request.node.callspec.params.get("kind", "local")
    if kind == "local":
        return {}
    return {kind: request.getfixturevalue("sshd" if kind == "sftp" else "sshd_nosftp")}


def flat(text: str) -> str:
    """The screen's words with the wrapping undone."""
    return " ".join(text.split())


def preset_set(herd: Herd) -> subprocess.CompletedProcess[str]:
    return herd.run("preset", "set", "m", "alpha", "ctx-size=512", timeout=90)


def assert_one_line_failure(r: subprocess.CompletedProcess[str], preset: Path, cause: str) -> None:
    err = r.stderr.strip()
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and "\n" not in err, r.stderr
    assert str(preset) in err and cause in err, err
    assert "wrote" not in r.stdout


# how the disk is broken, the cause the message must name, the files left on it afterwards
DISK_BREAKAGES = {
    "full": (fill, "no space left on device", {"models.ini", "filler"}),
    "read-only": (read_only, "read-only file system", {"models.ini"}),
}


@pytest.mark.usefixtures("needs_root")  # mounts a tmpfs
@pytest.mark.parametrize("breakage", list(DISK_BREAKAGES))
@pytest.mark.parametrize("kind", KINDS)
def test_broken_disk(
    kind: str, breakage: str, tmp_path: Path, llama_server: str, servers: dict[str, SshServer]
) -> None:
    break_disk, cause, kept = DISK_BREAKAGES[breakage]
    with tmpfs(tmp_path / "disk") as disk:
        preset = disk / "models.ini"
        preset.write_text(START)
        herd = Herd(root=tmp_path, config=tmp_path / "config.toml")
        herd.write_config(machine_toml(kind, preset, llama_server, servers))
        break_disk(disk)
        r = preset_set(herd)
        print(f"{breakage} disk, {kind}: exit {r.returncode}: {r.stderr.strip()}")
        assert_one_line_failure(r, preset, cause)
        assert preset.read_text() == START
        assert leftovers(disk, kept) == []


@pytest.fixture
def second_user(needs_root: None) -> Iterator[str]:
    """A real second Unix user (the tests run as root, for whom no permission is ever denied)."""
    if shutil.which("useradd") is None:
        missing("no useradd here: cannot make a second user")
    r = subprocess.run(["useradd", "-M", "-p", "*", "-s", "/bin/sh", SECOND_USER], capture_output=True, text=True)
    if r.returncode not in (0, 9):  # 9: exists already (a run that was killed)
        missing(f"cannot add a user here: {r.stderr.strip()}")
    try:
        yield SECOND_USER
    finally:
        subprocess.run(["userdel", SECOND_USER], capture_output=True)


@contextlib.contextmanager
def readable_keys(server: SshServer) -> Iterator[None]:
    """sshd reads authorized_keys as the user logging in: let the second user reach the test server's file for the
    length of one command, then put every mode back."""
    keys = Path(server.workdir) / "authorized_keys"
    paths = [keys, *[p for p in keys.parents if p != Path("/") and str(p).startswith(str(keys.parents[-2]))]]
    before = {p: p.stat().st_mode & 0o7777 for p in paths}
    try:
        keys.chmod(before[keys] | 0o004)
        for p in paths[1:]:
            p.chmod(before[p] | 0o001)
        yield
    finally:
        for p, mode in before.items():
            p.chmod(mode)


@pytest.mark.ssh
@pytest.mark.parametrize("kind", ["sftp", "nosftp"])
def test_permission_denied_for_another_user(
    kind: str, tmp_path: Path, llama_server: str, servers: dict[str, SshServer], second_user: str
) -> None:
    folder = tmp_path / "shared"
    folder.mkdir(mode=0o755)
    tmp_path.chmod(0o755)
    preset = folder / "models.ini"
    preset.write_text(START)
    preset.chmod(0o644)
    herd = Herd(root=tmp_path, config=tmp_path / "config.toml")
    herd.write_config(machine_toml(kind, preset, llama_server, servers, user=second_user))
    with readable_keys(servers[kind]):
        r = herd.run("preset", "remove", "m", "alpha", timeout=90)  # needs no --help: llama-server is root's here
    print(f"permission denied, {kind}: exit {r.returncode}: {r.stderr.strip()}")
    if "cannot connect" in r.stderr:  # the login itself, not the write: what sshd said of it
        print(servers[kind].log_path.read_text(errors="replace")[-3000:])
    assert_one_line_failure(r, preset, "permission denied")
    assert preset.read_text() == START
    assert leftovers(folder, {"models.ini"}) == []


@pytest.mark.parametrize("kind", KINDS)
async def test_vanished_directory(kind: str, tmp_path: Path, llama_server: str, servers: dict[str, SshServer]) -> None:
    """The editor read the preset, then its directory went away: the write is refused naming the file, and the
    directory is not silently made again under an edit read from the old one."""
    folder = tmp_path / "gone"
    folder.mkdir()
    preset = folder / "models.ini"
    preset.write_text(START)
    if kind == "local":
        cfg = MachineConfig(name="m", preset=str(preset), program=llama_server)
    else:
        s = servers[kind]
        cfg = MachineConfig(
            name="m", host=s.host, port=s.port, user=s.user, identity_file=s.client_key,
            known_hosts=s.known_hosts, program=llama_server, preset=str(preset),
        )  # fmt: skip
    m = Machine(cfg, emit=lambda ev: None)
    try:
        await m.transport.connect()
        store = PresetStore(m)
        plan = await store.plan(set_keys("alpha", {"ctx-size": "512"}, None))
        shutil.rmtree(folder)
        with pytest.raises(HerdError) as e:
            await store.apply(plan)
        msg = str(e.value)
        print(f"vanished directory, {kind}: {msg}")
        assert "\n" not in msg and str(preset) in msg and "no longer exists" in msg
        assert not folder.exists()
    finally:
        await m.close()


@pytest.mark.usefixtures("needs_root")  # mounts a tmpfs
async def test_dashboard_editor_on_a_full_disk_shows_the_message_and_stays_up(
    tmp_path: Path, llama_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.ui.test_preset_form import FormHost, opened

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    with tmpfs(tmp_path / "disk") as disk:
        preset = disk / "models.ini"
        preset.write_text(START)
        fleet = Fleet(Config(machines=(MachineConfig(name="here", preset=str(preset), program=llama_server),)))
        try:
            host = FormHost(fleet, "alpha")
            async with host.run_test(size=(100, 40)) as pilot:
                form = await opened(host, pilot)
                fill(disk)
                form.query_one("#field-ctx-size", Input).focus()
                await pilot.press("5", "1", "2", "ctrl+s")
                await wait_for(lambda: form.mode == "review", pilot=pilot)
                await pilot.press("enter")
                await wait_for(lambda: "no space left on device" in flat(screen_text(host)), timeout=20, pilot=pilot)
                shown = flat(screen_text(host))
                assert "Not written" in shown and str(preset) in shown
                assert host.is_running and host.screen is form and not host.results
                await pilot.press("escape")  # still answers keys
                await pilot.pause(0.2)
            assert preset.read_text() == START
            assert leftovers(disk, {"models.ini", "filler"}) == []
        finally:
            with contextlib.suppress(Exception):
                await fleet.close()
