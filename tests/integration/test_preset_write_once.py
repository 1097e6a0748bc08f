"""A preset's backup and new text in one request over ssh (app/services/presets/write_once.py), real sshd."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from app.services.core.errors import WriteFailed
from app.services.presets.write_once import backup_then_write, fits
from tests.helpers.sshd import SshServer, ssh_transport

pytestmark = pytest.mark.ssh


async def test_the_backup_is_written_then_the_preset(sshd: SshServer, tmp_path: Path) -> None:
    preset, backup = tmp_path / "models.ini", tmp_path / "models.ini.bak-1"
    preset.write_text("[a]\nx = 1\n")
    t = ssh_transport(sshd)
    try:
        await backup_then_write(t, str(backup), b"[a]\nx = 1\n", str(preset), b"[a]\nx = 2\n", 0o640)
        assert backup.read_text() == "[a]\nx = 1\n" and stat.S_IMODE(backup.stat().st_mode) == 0o600
        assert preset.read_text() == "[a]\nx = 2\n" and stat.S_IMODE(preset.stat().st_mode) == 0o640
        # a backup that cannot be written: the preset is left as it was, and the error names the backup
        with pytest.raises(WriteFailed) as ei:
            await backup_then_write(t, "/proc/1/no/such.bak", b"old", str(preset), b"[a]\nx = 3\n", 0o640)
        assert ei.value.path == "/proc/1/no/such.bak"
        assert preset.read_text() == "[a]\nx = 2\n"
        # a preset that cannot be written: named as such
        with pytest.raises(WriteFailed) as ei:
            await backup_then_write(t, str(backup), b"old", "/proc/1/no/models.ini", b"new", 0o640)
        assert ei.value.path == "/proc/1/no/models.ini"
    finally:
        await t.close()


def test_only_small_files_go_in_one_request() -> None:
    assert fits(b"x" * 1000, b"y" * 1000)
    assert not fits(b"x" * 10_000, b"y" * 10_000)
