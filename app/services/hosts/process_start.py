"""When a process started, and whether a live process is the one a record names (a reused pid is not).

The epoch start time (starttime ticks / CLK_TCK + btime) is not enough on its own: /proc/stat's btime is the wall
clock minus the boot clock, so it moves whenever the wall clock is stepped (NTP or a VM's clock sync early after
boot, a VM restored from a snapshot), and the same process then seems to have started at another time. The boot
id and the start in seconds since boot do not move with the clock; where both sides have them they decide. A
record written by an older llamaherd, or a machine without /proc (psutil's path), has only the epoch start.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

BOOT_ID_PATH = "/proc/sys/kernel/random/boot_id"
# The kernel's boot id is a UUID; anything else from the far side is not one (and is not kept).
_BOOT_ID = re.compile(r"[0-9a-fA-F-]{8,64}\Z")
EPOCH_TOLERANCE = 1.0  # sides may round differently
SINCE_BOOT_TOLERANCE = 0.02  # ticks are 10 ms; both sides compute the same ticks / CLK_TCK


@dataclass(frozen=True)
class ProcStart:
    epoch: float  # epoch seconds, to 0.01 s (moves when the wall clock is stepped)
    boot_id: str = ""  # "" where unknown
    since_boot: float | None = None  # seconds after boot, to 0.01 s; None where unknown

    @property
    def boot_relative(self) -> bool:
        return bool(self.boot_id) and self.since_boot is not None


def parse_boot_id(text: str) -> str:
    """The boot id from /proc/sys/kernel/random/boot_id's text, or "" when it is not one."""
    s = text.strip()
    return s.lower() if _BOOT_ID.match(s) else ""


def same_start(a: float | None, b: float | None) -> bool:
    """Whether two epoch start times are the same process (1 s tolerance: sides may round differently)."""
    return a is not None and b is not None and abs(a - b) <= EPOCH_TOLERANCE


def same_process(live: ProcStart | None, recorded: ProcStart) -> bool:
    """Whether a live process (None: gone or a zombie) is the recorded one: by boot id and start since boot where
    both have them (a wall-clock step changes neither), else by the epoch start time."""
    if live is None:
        return False
    if live.boot_relative and recorded.boot_relative:
        assert live.since_boot is not None and recorded.since_boot is not None
        return live.boot_id == recorded.boot_id and abs(live.since_boot - recorded.since_boot) <= SINCE_BOOT_TOLERANCE
    return same_start(live.epoch, recorded.epoch)
