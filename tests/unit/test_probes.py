"""Pure parsing of what machines say about themselves, and the small helpers both transports share."""

from __future__ import annotations

import random

import pytest

from app.services.core.host_types import GpuStats
from app.services.hosts import proc_probes
from app.services.hosts.process_start import same_start
from app.services.hosts.transport import PORT_RANGE, SPAWN_SCRIPT, expand_template, pick_free_port, spawn_args

PROC_STAT_1 = """cpu  100 5 50 800 20 3 2 10 7 0
cpu0 50 2 25 400 10 1 1 5 3 0
intr 12345 0 0
ctxt 99
btime 1700000000
processes 4242
"""
PROC_STAT_2 = """cpu  160 5 70 900 40 3 2 10 9 0
btime 1700000000
"""

MEMINFO = """MemTotal:       16000000 kB
MemFree:         2000000 kB
MemAvailable:    6000000 kB
Buffers:          500000 kB
Cached:          3000000 kB
HugePages_Total:       0
"""


def test_proc_stat_and_cpu_percent() -> None:
    a = proc_probes.parse_proc_stat(PROC_STAT_1)
    b = proc_probes.parse_proc_stat(PROC_STAT_2)
    # guest (7, 9) is already inside user and must not be counted twice
    assert a == proc_probes.CpuSample(100 + 5 + 50 + 800 + 20 + 3 + 2 + 10, 820)
    assert proc_probes.cpu_percent(None, a) == 0.0
    # delta total 200, delta idle (idle+iowait) 120 -> 40 % busy
    assert proc_probes.cpu_percent(a, b) == 40.0
    assert proc_probes.cpu_percent(b, b) == 0.0
    assert proc_probes.parse_btime(PROC_STAT_1) == 1700000000


def test_proc_stat_without_cpu_line() -> None:
    with pytest.raises(ValueError):
        proc_probes.parse_proc_stat("intr 1\n")


def test_meminfo_used_is_total_minus_available() -> None:
    assert proc_probes.parse_meminfo(MEMINFO) == ((16000000 - 6000000) * 1024, 16000000 * 1024)
    old = "MemTotal: 1000 kB\nMemFree: 100 kB\nBuffers: 50 kB\nCached: 250 kB\n"
    assert proc_probes.parse_meminfo(old) == (600 * 1024, 1000 * 1024)


def test_loadavg() -> None:
    assert proc_probes.parse_loadavg("0.52 1.25 2.00 3/812 12345\n") == (0.52, 1.25, 2.0)
    with pytest.raises(ValueError):
        proc_probes.parse_loadavg("")


def test_nvidia_smi() -> None:
    text = (
        "NVIDIA GeForce RTX 4090, 20480, 24564, 97\n"
        "NVIDIA A100-SXM4-80GB, 1, 81920, [N/A]\n"
        "\n"
        "Odd, Name, With Commas, 5, 10, 0\n"
        "garbage\n"
    )
    assert proc_probes.parse_nvidia_smi(text) == (
        GpuStats("NVIDIA GeForce RTX 4090", 20480.0, 24564.0, 97.0),
        GpuStats("NVIDIA A100-SXM4-80GB", 1.0, 81920.0, 0.0),
        GpuStats("Odd, Name, With Commas", 5.0, 10.0, 0.0),
    )
    assert proc_probes.parse_nvidia_smi("") == ()


def _stat(pid: int, ppid: int, rss: int, comm: str | None = None, start: int = 100, state: str = "S") -> str:
    rest = ["0"] * 44  # rest[k] is field k + 3 of /proc/<pid>/stat
    rest[0], rest[1], rest[19], rest[21] = state, str(ppid), str(start), str(rss)
    return f"{pid} ({comm or f'p{pid}'}) " + " ".join(rest)


def test_pid_stat_with_awkward_comm() -> None:
    st = proc_probes.parse_pid_stat(_stat(4242, 1, 55, comm="my (odd) name", start=12345, state="Z"))
    assert st == proc_probes.PidStat(4242, "my (odd) name", "Z", 1, 12345, 55)
    assert proc_probes.start_time(12345, 100, 1700000000) == 1700000123.45
    with pytest.raises(ValueError):
        proc_probes.parse_pid_stat("no parens here")
    with pytest.raises(ValueError):
        proc_probes.parse_pid_stat("1 (short) S 0 0")


def test_tree_rss() -> None:
    text = "\n".join([_stat(1, 0, 10), _stat(10, 1, 100), _stat(11, 10, 5), _stat(12, 11, 1), _stat(20, 1, 999)])
    text += "\nbroken line\n"
    stats = proc_probes.parse_pid_stats(text)
    assert len(stats) == 5
    assert proc_probes.tree_rss(stats, 10, 4096) == (100 + 5 + 1) * 4096
    assert proc_probes.tree_rss(stats, 12, 4096) == 4096
    assert proc_probes.tree_rss(stats, 999, 4096) is None


def test_proc_net_tcp_ports() -> None:
    text = (
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
        "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000 0 1 1\n"
        "   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0 0 2 1\n"
        "   0: 00000000000000000000000001000000:C350 00000000000000000000000000000000:0000 0A 0\n"
    )
    assert proc_probes.parse_proc_net_tcp(text) == {8080, 22, 50000}


def test_pick_free_port_avoids_used() -> None:
    lo, hi = PORT_RANGE
    used = set(range(lo, hi + 1)) - {31337}
    assert pick_free_port(used, random.Random(1)) == 31337


def test_host_probe_sections() -> None:
    text = (
        "@@llamaherd:stat\n" + PROC_STAT_1 + "@@llamaherd:meminfo\n" + MEMINFO + "@@llamaherd:loadavg\n"
        "1.00 2.00 3.00 1/2 3\n@@llamaherd:gpu\nFake GPU, 1024, 8192, 37\n"
    )
    p = proc_probes.parse_host_probe(text)
    assert p.cpu == proc_probes.parse_proc_stat(PROC_STAT_1)
    assert p.mem_total == 16000000 * 1024
    assert p.load_avg == (1.0, 2.0, 3.0)
    assert p.gpus == (GpuStats("Fake GPU", 1024.0, 8192.0, 37.0),)
    no_gpu = text.split("@@llamaherd:gpu")[0]
    assert proc_probes.parse_host_probe(no_gpu).gpus == ()


def test_host_stats_script_is_constant_shell() -> None:
    assert "command -v nvidia-smi" in proc_probes.HOST_STATS_SCRIPT
    assert "/proc/stat" in proc_probes.HOST_STATS_SCRIPT


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("~", "/home/u"),
        ("~/models", "/home/u/models"),
        ("$HOME/x", "/home/u/x"),
        ("${HOME}/x", "/home/u/x"),
        ("$HOMEX/x", "$HOMEX/x"),
        ("${XDG_STATE_HOME:-$HOME/.local/state}/llamaherd", "/home/u/.local/state/llamaherd"),
        ("/abs/$(touch x)/~", "/abs/$(touch x)/~"),
        ("~other/x", "~other/x"),
    ],
)
def test_expand_template(template: str, expected: str) -> None:
    assert expand_template(template, "/home/u", None) == expected


def test_expand_template_xdg() -> None:
    t = "${XDG_STATE_HOME:-$HOME/.local/state}/llamaherd"
    assert expand_template(t, "/home/u", "/var/state") == "/var/state/llamaherd"
    # relative and empty values are invalid per the XDG spec: the default applies
    assert expand_template(t, "/home/u", "rel") == "/home/u/.local/state/llamaherd"
    assert expand_template(t, "/home/u", "") == "/home/u/.local/state/llamaherd"


def test_same_start() -> None:
    assert same_start(100.0, 100.9)
    assert not same_start(100.0, 101.5)
    assert not same_start(None, 100.0)


def test_spawn_args_keep_values_out_of_the_script() -> None:
    args = spawn_args(["prog", "$(x)"], "/l/og", {"A": "1 $(y)"}, None)
    assert args[:4] == ["sh", "-c", SPAWN_SCRIPT, "sh"]
    assert args[4:] == ["/l/og", "", "A=1 $(y)", "--", "prog", "$(x)"]
    with pytest.raises(ValueError):
        spawn_args(["p"], "/l", {"BAD NAME": "x"}, None)
    with pytest.raises(ValueError):
        spawn_args([], "/l", None, None)
