"""Every process command line on this machine, sampled every few milliseconds while a block runs: what `ps` would
show another user of the serving machine. Tests use it to prove a secret (a key, a token, a file's contents) never
travels as an argument."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import psutil

DISTINCT_LIMIT = 20_000  # command lines kept (distinct ones): a start runs a few hundred


@contextlib.contextmanager
def argv_seen() -> Iterator[set[str]]:
    """The distinct command lines seen (arguments joined by spaces) while the block runs."""
    seen: set[str] = set()
    stop = threading.Event()

    def look() -> None:
        while not stop.is_set():
            for p in psutil.process_iter(["cmdline"]):
                if len(seen) < DISTINCT_LIMIT:
                    seen.add(" ".join(p.info["cmdline"] or []))
            stop.wait(0.003)

    t = threading.Thread(target=look, daemon=True)
    t.start()
    try:
        yield seen
    finally:
        stop.set()
        t.join(5)


@contextlib.contextmanager
def argv_watch(secrets: list[str]) -> Iterator[list[str]]:
    """Every command line seen while the block runs that holds one of `secrets` (cut to 200 characters)."""
    holding: list[str] = []
    with argv_seen() as seen:
        yield holding
    holding.extend(cmd[:200] for cmd in sorted(seen) if any(s in cmd for s in secrets))
