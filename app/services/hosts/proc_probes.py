"""Pure parsers for what a machine says about itself: /proc files and `nvidia-smi` output.

Both transports feed these the same text (the local one through psutil where it is the same number), so a
figure computed on one side matches the other. Nothing here does I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import NamedTuple

from app.services.core.host_types import GpuStats
from app.services.hosts.process_start import ProcStart, parse_boot_id

NVIDIA_SMI_QUERY = (
    "nvidia-smi",
    "--query-gpu=name,memory.used,memory.total,utilization.gpu",
    "--format=csv,noheader,nounits",
)

# Sections of the one remote host-stats command, each introduced by a marker line.
_MARK = "@@llamaherd:"

# One command for the remote side: three /proc files plus nvidia-smi only when installed. A constant: no
# value from outside ever goes into it.
HOST_STATS_SCRIPT = (
    f"echo {_MARK}stat; cat /proc/stat; "
    f"echo {_MARK}meminfo; cat /proc/meminfo; "
    f"echo {_MARK}loadavg; cat /proc/loadavg; "
    "if command -v nvidia-smi >/dev/null 2>&1; then "
    f"echo {_MARK}gpu; {' '.join(NVIDIA_SMI_QUERY)} 2>/dev/null; fi; "
    "exit 0"
)


class CpuSample(NamedTuple):
    """Cumulative jiffies of the aggregate `cpu` line: all of them, and the idle ones (idle + iowait)."""

    total: int
    idle: int


class PidStat(NamedTuple):
    """The fields of /proc/<pid>/stat that llamaherd uses."""

    pid: int
    comm: str
    state: str
    ppid: int
    starttime: int  # clock ticks after boot
    rss_pages: int


class HostProbe(NamedTuple):
    cpu: CpuSample
    mem_used: int
    mem_total: int
    load_avg: tuple[float, float, float]
    gpus: tuple[GpuStats, ...]


def parse_proc_stat(text: str) -> CpuSample:
    """The aggregate `cpu` line of /proc/stat. guest time is already counted in user, so it is left out."""
    for line in text.splitlines():
        if line.startswith("cpu "):
            vals = [int(v) for v in line.split()[1:9]]
            vals += [0] * (8 - len(vals))
            user, nice, system, idle, iowait, irq, softirq, steal = vals
            return CpuSample(user + nice + system + idle + iowait + irq + softirq + steal, idle + iowait)
    raise ValueError("no aggregate 'cpu' line in /proc/stat")


def parse_btime(text: str) -> int:
    """Boot time (epoch seconds) from the `btime` line of /proc/stat."""
    for line in text.splitlines():
        if line.startswith("btime "):
            return int(line.split()[1])
    raise ValueError("no 'btime' line in /proc/stat")


def cpu_percent(prev: CpuSample | None, cur: CpuSample) -> float:
    """Busy share of the time between two samples, 0..100. 0.0 without a previous sample (like psutil)."""
    if prev is None:
        return 0.0
    dt = cur.total - prev.total
    if dt <= 0:
        return 0.0
    busy = dt - (cur.idle - prev.idle)
    return round(min(100.0, max(0.0, 100.0 * busy / dt)), 1)


def parse_meminfo(text: str) -> tuple[int, int]:
    """(used, total) in bytes; used = total - MemAvailable, the memory a new process could not have."""
    fields: dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if not parts:
            continue
        try:
            value = int(parts[0])
        except ValueError:
            continue
        fields[key.strip()] = value * 1024 if len(parts) > 1 and parts[1] == "kB" else value
    if "MemTotal" not in fields:
        raise ValueError("no MemTotal in /proc/meminfo")
    total = fields["MemTotal"]
    avail = fields.get("MemAvailable")
    if avail is None:  # kernels before 3.14
        avail = fields.get("MemFree", 0) + fields.get("Buffers", 0) + fields.get("Cached", 0)
    return max(0, total - avail), total


def parse_loadavg(text: str) -> tuple[float, float, float]:
    parts = text.split()
    if len(parts) < 3:
        raise ValueError(f"unexpected /proc/loadavg: {text!r}")
    return float(parts[0]), float(parts[1]), float(parts[2])


def _num(s: str) -> float:
    """A number from nvidia-smi; "[N/A]" and "[Not Supported]" (seen on MIG and some laptops) read as 0."""
    try:
        v = float(s.strip())
    except ValueError:
        return 0.0
    return v if math.isfinite(v) else 0.0


def parse_nvidia_smi(text: str) -> tuple[GpuStats, ...]:
    """`nvidia-smi --query-gpu=name,memory.used,memory.total,utilization.gpu --format=csv,noheader,nounits`."""
    gpus: list[GpuStats] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        # Split from the right: the three numbers never hold a comma, a name could.
        parts = line.rsplit(",", 3)
        if len(parts) != 4:
            continue
        name, used, total, util = parts
        gpus.append(GpuStats(name.strip(), _num(used), _num(total), _num(util)))
    return tuple(gpus)


def parse_pid_stat(line: str) -> PidStat:
    """One /proc/<pid>/stat line. comm may hold spaces and parentheses, so split at the LAST ')'."""
    head, sep, tail = line.rpartition(")")
    if not sep:
        raise ValueError(f"unexpected /proc/<pid>/stat: {line[:80]!r}")
    pid_s, _, comm = head.partition(" (")
    rest = tail.split()
    # rest[0] is field 3 (state); field N is rest[N - 3].
    if len(rest) < 22:
        raise ValueError(f"short /proc/<pid>/stat: {line[:80]!r}")
    return PidStat(int(pid_s), comm, rest[0], int(rest[1]), int(rest[19]), int(rest[21]))


def start_time(starttime_ticks: int, clk_tck: int, btime: int) -> float:
    """Process start in epoch seconds, as psutil computes it (starttime / CLK_TCK + btime), to 0.01 s."""
    return round(starttime_ticks / clk_tck + btime, 2)


def proc_start(starttime_ticks: int, clk_tck: int, btime: int, boot_id_text: str) -> ProcStart:
    """The epoch start as start_time, with the boot id and the start since boot, which a clock step leaves alone."""
    boot_id = parse_boot_id(boot_id_text)
    since = round(starttime_ticks / clk_tck, 2) if boot_id else None
    return ProcStart(start_time(starttime_ticks, clk_tck, btime), boot_id, since)


def parse_start_lines(out: bytes, *, live_only: bool) -> ProcStart | None:
    """START_TIME_SCRIPT's answer (CLK_TCK, the btime line, the boot id, /proc/PID/stat); None when it is not one,
    or, with live_only, when the process is a zombie."""
    lines = out.decode(errors="replace").splitlines()
    if len(lines) < 4:
        return None
    try:
        clk = int(lines[0])
        btime = parse_btime(lines[1])
        st = parse_pid_stat(lines[3])
    except ValueError:
        return None
    if live_only and st.state == "Z":
        return None
    return proc_start(st.starttime, clk, btime, lines[2])


def tree_rss(stats: Iterable[PidStat], pid: int, page_size: int) -> int | None:
    """Resident bytes of pid and all its descendants; None when pid is not among the stats."""
    by_parent: dict[int, list[PidStat]] = {}
    root: PidStat | None = None
    for st in stats:
        by_parent.setdefault(st.ppid, []).append(st)
        if st.pid == pid:
            root = st
    if root is None:
        return None
    total = 0
    todo = [root]
    seen: set[int] = set()
    while todo:
        st = todo.pop()
        if st.pid in seen:
            continue
        seen.add(st.pid)
        total += st.rss_pages * page_size
        todo.extend(by_parent.get(st.pid, ()))
    return total


def parse_pid_stats(text: str) -> list[PidStat]:
    """Many /proc/<pid>/stat lines (from `cat /proc/[0-9]*/stat`); unreadable lines are skipped."""
    out: list[PidStat] = []
    for line in text.splitlines():
        try:
            out.append(parse_pid_stat(line))
        except ValueError:
            continue
    return out


def parse_proc_net_tcp(text: str) -> set[int]:
    """Local ports of every socket in /proc/net/tcp or tcp6 (any state, any address: all are unavailable)."""
    ports: set[int] = set()
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 2 or ":" not in parts[1]:
            continue
        try:
            ports.add(int(parts[1].rsplit(":", 1)[1], 16))
        except ValueError:
            continue  # the header line
    return ports


def split_sections(text: str) -> dict[str, str]:
    """Split the output of HOST_STATS_SCRIPT at its marker lines."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith(_MARK):
            current = sections.setdefault(line[len(_MARK) :].strip(), [])
        elif current is not None:
            current.append(line)
    return {k: "\n".join(v) for k, v in sections.items()}


def parse_host_probe(text: str) -> HostProbe:
    """Everything HOST_STATS_SCRIPT printed."""
    s = split_sections(text)
    used, total = parse_meminfo(s.get("meminfo", ""))
    return HostProbe(
        cpu=parse_proc_stat(s.get("stat", "")),
        mem_used=used,
        mem_total=total,
        load_avg=parse_loadavg(s.get("loadavg", "")),
        gpus=parse_nvidia_smi(s.get("gpu", "")),
    )
