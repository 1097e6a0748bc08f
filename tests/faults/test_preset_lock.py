"""No lost edits: concurrent `llamaherd preset set` from separate processes, locally and over ssh (with and without
SFTP), each pair editing one file at the same moment. Every edit that says "wrote" is in the file afterwards; a
writer that read before the other wrote is refused with the conflict, labelled "on disk now" and "your edit"."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from app.config import MachineConfig
from app.services.machine.machine import Machine
from app.services.presets.store import PresetConflict, PresetStore, set_keys
from tests.helpers.herd import Herd, local_config
from tests.helpers.machine_toml import ssh_toml
from tests.helpers.sshd import SshServer

# 24 pairs (6 rounds of 8 processes racing) in the suite: each `llamaherd` process costs ~0.6 s of CPU to start, and
# 50 pairs over three transports were ~180 s of the suite's CPU. A longer hunt: LLAMAHERD_LOCK_PAIRS=200.
PAIRS = int(os.environ.get("LLAMAHERD_LOCK_PAIRS", "24"))
AT_ONCE = 4  # pairs running together: 8 llamaherd processes (sshd's MaxStartups allows 10 unauthenticated)
START = "[*]\nparallel = 1\n\n[alpha]\nmodel = /models/alpha.gguf\n"


def run_pairs(herd: Herd, machine: str, preset: Path) -> tuple[int, int, list[str]]:
    """PAIRS pairs of concurrent edits, AT_ONCE pairs at a time; returns (edits said written, lost, failures)."""
    said_written: list[str] = []
    failures: list[str] = []
    jobs = [(i, side) for i in range(PAIRS) for side in "ab"]
    for start in range(0, len(jobs), 2 * AT_ONCE):
        batch = jobs[start : start + 2 * AT_ONCE]
        procs: list[tuple[str, subprocess.Popen[str]]] = []
        for i, side in batch:
            section = f"p{i}{side}"
            procs.append((section, herd.popen("preset", "set", machine, section, f"ctx-size={1000 + i}")))
        for section, p in procs:
            try:
                out, err = p.communicate(timeout=120)
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            if p.returncode == 0 and "wrote " in out:
                said_written.append(section)
            else:
                failures.append(f"{section}: exit {p.returncode}: {err.strip()[-300:]}")
    text = preset.read_text()
    lost = [s for s in said_written if f"[{s}]\nctx-size = " not in text]
    assert text.startswith(START), "the lines nobody edited must stay as they were"
    return len(said_written), len(lost), failures


@pytest.mark.timeout(900)
def test_concurrent_preset_set_pairs_locally_lose_nothing(tmp_path: Path, llama_server: str) -> None:
    preset = tmp_path / "models.ini"
    preset.write_text(START)
    herd = Herd(root=tmp_path, config=tmp_path / "config.toml", extra_env={"LLAMA_SERVER": llama_server})
    herd.write_config(local_config("here", preset))
    written, lost, failures = run_pairs(herd, "here", preset)
    print(f"local: {2 * PAIRS} edits in {PAIRS} concurrent pairs: {written} written, {lost} lost")
    assert lost == 0
    # Under the lock every writer builds on the other's edit: none is refused, none is lost.
    assert not failures, failures[:5]
    assert written == 2 * PAIRS


@pytest.mark.timeout(900)
@pytest.mark.ssh  # its sshd is picked with request.getfixturevalue
@pytest.mark.parametrize("kind", ["sftp", "nosftp"])
def test_concurrent_preset_set_pairs_over_ssh_lose_nothing(
    tmp_path: Path, llama_server: str, kind: str, request: pytest.FixtureRequest
) -> None:
    server: SshServer = request.getfixturevalue("sshd" if kind == "sftp" else "sshd_nosftp")
    preset = tmp_path / "remote models.ini"
    preset.write_text(START)
    herd = Herd(root=tmp_path, config=tmp_path / "config.toml")
    herd.write_config(ssh_toml(server, "far", preset, llama_server))
    written, lost, failures = run_pairs(herd, "far", preset)
    print(f"ssh ({kind}): {2 * PAIRS} edits in {PAIRS} concurrent pairs: {written} written, {lost} lost")
    assert lost == 0
    assert not failures, failures[:5]
    assert written == 2 * PAIRS


def _local_machine(preset: Path, llama_server: str) -> Machine:
    return Machine(MachineConfig(name="here", preset=str(preset), program=llama_server), emit=lambda ev: None)


async def _stale_writer_is_refused(m1: Machine, m2: Machine, preset: Path) -> None:
    a, b = PresetStore(m1), PresetStore(m2)
    snap = await a.read()
    plan_a = await a.plan(set_keys("alpha", {"ctx-size": "111"}, None), snap)
    plan_b = await b.plan(set_keys("alpha", {"ctx-size": "222"}, None), snap)  # read before A wrote
    await a.apply(plan_a)
    with pytest.raises(PresetConflict) as e:
        await b.apply(plan_b)
    assert "ctx-size = 111" in preset.read_text() and "222" not in preset.read_text()
    diff = e.value.diff
    assert f"--- {e.value.path} (on disk now)" in diff and f"+++ {e.value.path} (your edit)" in diff
    assert "-ctx-size = 111" in diff and "+ctx-size = 222" in diff


async def test_a_writer_that_read_before_the_other_wrote_is_refused_locally(tmp_path: Path, llama_server: str) -> None:
    preset = tmp_path / "models.ini"
    preset.write_text(START)
    m1, m2 = _local_machine(preset, llama_server), _local_machine(preset, llama_server)
    try:
        await _stale_writer_is_refused(m1, m2, preset)
    finally:
        await m1.close()
        await m2.close()


@pytest.mark.ssh  # its sshd is picked with request.getfixturevalue
@pytest.mark.parametrize("kind", ["sftp", "nosftp"])
async def test_a_writer_that_read_before_the_other_wrote_is_refused_over_ssh(
    tmp_path: Path, llama_server: str, kind: str, request: pytest.FixtureRequest
) -> None:
    server: SshServer = request.getfixturevalue("sshd" if kind == "sftp" else "sshd_nosftp")
    preset = tmp_path / "remote models.ini"
    preset.write_text(START)

    def remote() -> Machine:
        cfg = MachineConfig(
            name="far", host=server.host, port=server.port, user=server.user, identity_file=server.client_key,
            known_hosts=server.known_hosts, program=llama_server, preset=str(preset),
        )  # fmt: skip
        return Machine(cfg, emit=lambda ev: None)

    m1, m2 = remote(), remote()
    try:
        await m1.transport.connect()
        await m2.transport.connect()
        await _stale_writer_is_refused(m1, m2, preset)
    finally:
        await m1.close()
        await m2.close()
