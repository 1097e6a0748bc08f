"""A router's process-tree RSS on this host, from one shared scan of the process table per stats round.

psutil's children(recursive=True) reads every /proc/*/stat to learn who is whose parent: every 2 s for each local
machine, on a busy host that was most of an idle dashboard's CPU (5 managed routers: 5 scans per round). The parent
map is made once and shared for SCAN_TTL seconds: the machines' rounds wake together (machine.next_round).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import psutil

SCAN_TTL = 0.25  # the machines of one round ask within milliseconds; a child newer than this is seen next round

_lock = threading.Lock()
_scan: tuple[float, dict[int, list[int]], frozenset[int]] | None = None


def _parents() -> dict[int, int]:
    ppid_map: Callable[[], dict[int, int]] | None = getattr(psutil, "_ppid_map", None)
    if ppid_map is not None:
        return ppid_map()
    return {p.pid: p.info["ppid"] for p in psutil.process_iter(["ppid"])}


def _children_map(now: float, root: int) -> dict[int, list[int]]:
    """Who is whose child, from a scan at most SCAN_TTL old that knew `root` (a root newer than the scan: again)."""
    global _scan
    with _lock:  # machines measure in worker threads: one scan, the others wait for it
        if _scan is None or not 0 <= now - _scan[0] <= SCAN_TTL or root not in _scan[2]:
            parents = _parents()
            kids: dict[int, list[int]] = {}
            for pid, ppid in parents.items():
                kids.setdefault(ppid, []).append(pid)
            _scan = (now, kids, frozenset(parents))
        return _scan[1]


def descendants(pid: int) -> list[int]:
    kids = _children_map(time.monotonic(), pid)
    out: list[int] = []
    todo = list(kids.get(pid, ()))
    while todo:
        c = todo.pop()
        if c in out or c == pid:
            continue  # a pid reused while the map was made cannot make a loop
        out.append(c)
        todo.extend(kids.get(c, ()))
    return out


def tree_rss(pid: int) -> int | None:
    """RSS of `pid` and its descendants in bytes; None when `pid` is gone. A child that ended meanwhile counts 0."""
    try:
        total = int(psutil.Process(pid).memory_info().rss)
    except psutil.Error:
        return None
    for c in descendants(pid):
        try:
            total += int(psutil.Process(c).memory_info().rss)
        except psutil.Error:
            continue
    return total
