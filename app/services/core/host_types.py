"""What a machine says of itself and of the commands run on it: host stats, command results, files, and the
state of the link to it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


@dataclass(frozen=True)
class GpuStats:
    name: str
    memory_used_mb: float
    memory_total_mb: float
    utilization_pct: float


@dataclass(frozen=True)
class HostStats:
    cpu_pct: float
    mem_used: int
    mem_total: int
    load_avg: tuple[float, float, float]
    gpus: tuple[GpuStats, ...] = ()


@dataclass(frozen=True)
class RunResult:
    """Result of a command run on a machine."""

    returncode: int
    stdout: bytes
    stderr: bytes

    @property
    def ok(self) -> bool:
        return self.returncode == 0


@dataclass(frozen=True)
class FileInfo:
    path: str
    size: int
    mtime: float
    mode: int | None = None  # permission bits, where the reader asked for them (stat)


class Connection(StrEnum):
    LOCAL = "local"
    CONNECTING = "connecting"
    CONNECTED = "connected"
    UNREACHABLE = "unreachable"
