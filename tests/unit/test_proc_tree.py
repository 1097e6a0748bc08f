"""A process tree's RSS from the shared scan: real processes, the children found, a gone pid None."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import psutil

from app.services.hosts.process_tree import SCAN_TTL, descendants, tree_rss
from tests.helpers.wait import wait_for_sync


def test_tree_rss_counts_the_children_from_one_shared_scan() -> None:
    proc = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30 & wait"], start_new_session=True)
    try:
        wait_for_sync(lambda: len(psutil.Process(proc.pid).children()) == 2, 10, what="two children")
        time.sleep(SCAN_TTL + 0.05)  # a scan made before the children started is not used past this
        kids = descendants(proc.pid)
        assert sorted(kids) == sorted(c.pid for c in psutil.Process(proc.pid).children(recursive=True))
        own = psutil.Process(proc.pid).memory_info().rss
        total = tree_rss(proc.pid)
        assert total is not None and total > own
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert tree_rss(proc.pid) is None
