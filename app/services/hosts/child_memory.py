"""What each model of a router costs in memory: its child process's RSS, and its GPU memory where nvidia-smi says.

One command, the same on both transports (a local `sh`, or the ssh agent's session): it reads /proc once for the
router's direct children (a child is the router's own subprocess, reference §1.4), prints each one's stat line and
command line, then the GPU memory per process when nvidia-smi is installed. A child is matched to its model by the
`--port N` both its command line and the router's `status.args` carry (its `--alias` when the port says nothing).
Nothing from outside goes into the script: the router's pid is an argument, checked to be a number.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from app.services.hosts.proc_probes import PidStat, parse_pid_stat

_MARK = "@@llamaherd:"
OUTPUT_LIMIT = 1 << 20  # bytes read of the answer: a router with hundreds of children is still far below it
ARGV_LIMIT = 8192  # bytes of each child's command line: the port and alias are near its start

# $1: the router's pid. One cat and one awk read every /proc/PID/stat (a shell loop over them cost three times the
# CPU); cat goes on past a process that ended meanwhile, where mawk would stop at the missing file. awk prints the
# pid of each line whose ppid (field 4, counted after the ")" that ends comm, which may hold spaces) is the router.
CHILDREN_SCRIPT = rf"""r=$1
getconf PAGESIZE 2>/dev/null || echo 4096
kids=$(cat /proc/[0-9]*/stat 2>/dev/null |
  awk -v r="$r" '{{ s = $0; sub(/^.*\) /, "", s); split(s, f, " "); if (f[2] == r) print $1 }}')
for p in $kids; do
  s=
  read -r s 2>/dev/null <"/proc/$p/stat" || continue
  echo "{_MARK}child"
  echo "$s"
  head -c {ARGV_LIMIT} "/proc/$p/cmdline" 2>/dev/null | tr '\0' '\n'
  echo
done
if command -v nvidia-smi >/dev/null 2>&1; then
  echo "{_MARK}gpu"
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null | head -n 256
fi
exit 0
"""


@dataclass(frozen=True)
class ModelMemory:
    """One model's memory. None: not known, and `why` says why (an attached router, a model not loaded)."""

    rss: int | None = None
    """Resident bytes of the model's child process."""
    gpu: int | None = None
    """GPU bytes nvidia-smi lists for the child (0: it lists none; None: no nvidia-smi on that machine)."""
    pid: int | None = None
    why: str = ""


@dataclass(frozen=True)
class Child:
    stat: PidStat
    argv: tuple[str, ...]

    def arg(self, flag: str) -> str | None:
        a = self.argv
        return next((a[i + 1] for i in range(len(a) - 1) if a[i] == flag), None)


@dataclass(frozen=True)
class ChildProbe:
    page_size: int
    children: tuple[Child, ...]
    gpu_mib: Mapping[int, float] | None
    """pid -> MiB in use, from nvidia-smi; None when the machine has no nvidia-smi."""


def children_argv(router_pid: int) -> list[str]:
    return ["sh", "-c", CHILDREN_SCRIPT, "sh", str(int(router_pid))]


def parse_children(out: bytes) -> ChildProbe:
    """CHILDREN_SCRIPT's answer; lines that are not what they should be are skipped."""
    lines = out[:OUTPUT_LIMIT].decode(errors="replace").split("\n")
    try:
        page = int(lines[0].strip())
    except (ValueError, IndexError):
        page = 4096
    children: list[Child] = []
    gpu: dict[int, float] | None = None
    section: list[str] | None = None

    def close_child() -> None:
        if section:
            try:
                stat = parse_pid_stat(section[0])
            except ValueError:
                return
            children.append(Child(stat, tuple(a for a in section[1:] if a)))

    for line in lines[1:]:
        if line == f"{_MARK}child":
            close_child()
            section = []
        elif line == f"{_MARK}gpu":
            close_child()
            section = None
            gpu = {}
        elif gpu is not None:
            pid, _, mib = line.partition(",")
            try:
                gpu[int(pid.strip())] = gpu.get(int(pid.strip()), 0.0) + float(mib.strip())
            except ValueError:
                continue
        elif section is not None:
            section.append(line)
    if gpu is None:
        close_child()
    return ChildProbe(page if page > 0 else 4096, tuple(children), gpu)


def child_of(probe: ChildProbe, model_id: str, port: int | None) -> Child | None:
    """The router's child serving this model: by its port, else by its alias."""
    if port:
        hit = next((c for c in probe.children if c.arg("--port") == str(port)), None)
        if hit is not None:
            return hit
    return next((c for c in probe.children if c.arg("--alias") == model_id), None)


def memory_of(probe: ChildProbe, running: Iterable[tuple[str, int | None]]) -> dict[str, ModelMemory]:
    """(model id, its port) of each running model -> its memory, from one probe of the router's children."""
    out: dict[str, ModelMemory] = {}
    for model_id, port in running:
        child = child_of(probe, model_id, port)
        if child is None:
            out[model_id] = ModelMemory(why="no child process of the router serves it")
            continue
        gpu = None  # no nvidia-smi there; a process it does not list holds no GPU memory
        if probe.gpu_mib is not None:
            gpu = int(probe.gpu_mib.get(child.stat.pid, 0.0) * 1024 * 1024)
        out[model_id] = ModelMemory(child.stat.rss_pages * probe.page_size, gpu, child.stat.pid)
    return out
