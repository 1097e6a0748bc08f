"""Each model's memory from one probe of its router's children (hosts/child_memory.py), and what the detail pane
shows of a command line and a preset section (secrets redacted, control characters visible)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil

from app.services.hosts.child_memory import children_argv, memory_of, parse_children
from app.ui.screens.model_detail import REDACTED, command_line, redacted_section


def stat_line(pid: int, comm: str, ppid: int, rss_pages: int) -> str:
    rest = ["S", str(ppid), *["0"] * 17, "1234", *["0"] * 1, str(rss_pages), *["0"] * 20]
    return f"{pid} ({comm}) {' '.join(rest)}"


def probe_text(gpu: str | None) -> bytes:
    lines = [
        "4096",
        "@@llamaherd:child",
        stat_line(11, "llama-server", 10, 100),
        *["/bin/llama-server", "--port", "40001", "--alias", "alpha", ""],
        "@@llamaherd:child",
        stat_line(12, "a) b (c", 10, 50),  # a comm with spaces and parentheses: split at the last ")"
        *["/bin/llama-server", "--port", "0", "--alias", "beta", ""],
    ]
    if gpu is not None:
        lines += ["@@llamaherd:gpu", gpu]
    return "\n".join(lines).encode()


def test_children_are_matched_by_port_then_alias_and_gpu_memory_per_pid() -> None:
    probe = parse_children(probe_text("11, 2048\nnot a line\n99, 5"))
    assert [c.stat.pid for c in probe.children] == [11, 12]
    mems = memory_of(probe, [("alpha", 40001), ("beta", 40002), ("gamma", None)])
    assert mems["alpha"].rss == 100 * 4096 and mems["alpha"].gpu == 2048 << 20 and mems["alpha"].pid == 11
    assert mems["beta"].rss == 50 * 4096 and mems["beta"].gpu == 0  # nvidia-smi lists no such process
    assert mems["gamma"].rss is None and "no child process" in mems["gamma"].why


def test_without_nvidia_smi_gpu_memory_is_not_known() -> None:
    mems = memory_of(parse_children(probe_text(None)), [("alpha", 40001)])
    assert mems["alpha"].rss == 100 * 4096 and mems["alpha"].gpu is None


def test_the_script_finds_a_real_child_and_its_rss() -> None:
    """The script itself, run here: this process's child, its command line and /proc's RSS of it."""
    code = "import time; print('up', flush=True); time.sleep(30)"
    child = subprocess.Popen([sys.executable, "-c", code, "--alias", "sleeper"], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "up\n"  # started: its RSS holds still
        out = subprocess.run(children_argv(os.getpid()), capture_output=True, timeout=20, check=True).stdout
        mems = memory_of(parse_children(out), [("sleeper", None)])
        rss = psutil.Process(child.pid).memory_info().rss
        got = mems["sleeper"]
        assert got.pid == child.pid and got.rss is not None and abs(got.rss - rss) <= 0.05 * rss
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()


def test_gpu_memory_per_process_from_nvidia_smi_where_it_is(tmp_path: Path) -> None:
    """A fake nvidia-smi on the PATH (no GPU here) answering the per-process query for the child."""
    code = "import time; print('up', flush=True); time.sleep(30)"
    child = subprocess.Popen([sys.executable, "-c", code, "--alias", "gpu-user"], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "up\n"
        fake = tmp_path / "nvidia-smi"
        fake.write_text(
            '#!/bin/sh\ncase "$*" in *--query-compute-apps=pid,used_memory*) '
            f'echo "{child.pid}, 1536"; echo "1, 99";; *) exit 9;; esac\n'
        )
        fake.chmod(0o755)
        env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
        out = subprocess.run(children_argv(os.getpid()), capture_output=True, timeout=20, check=True, env=env).stdout
        got = memory_of(parse_children(out), [("gpu-user", None)])["gpu-user"]
        assert got.pid == child.pid and got.gpu == 1536 << 20
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()


def test_the_command_line_and_the_section_never_show_a_secret() -> None:
    args = ["/bin/llama-server", "--hf-token", "hf_x1", "--api-key=k2", "--alias", "a b", "--model", "m\x1b[31m"]
    line = command_line(args)
    assert "hf_x1" not in line and "k2" not in line
    assert f"--hf-token {REDACTED}" in line and f"--api-key={REDACTED}" in line and "'a b'" in line
    section = "[alpha]\nmodel = /m.gguf\nhf-token = hf_x1\n  api-key=k2\n"
    shown = redacted_section(section)
    assert "hf_x1" not in shown and "k2" not in shown and "model = /m.gguf" in shown
