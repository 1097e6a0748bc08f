"""Short pauses of Python's cyclic garbage collector in a dashboard that runs for days.

A full collection (generation 2) walks every object the process holds. Once the dashboard is up that is ~120,000
objects (Textual's modules and stylesheet, the widgets), and a pass took 55-97 ms on a 2-core machine: a frame
held back that long, twice in 20 answers of bench/ask_first_token.py (its slowest pieces to paint). Those objects
live as long as the app, so once the first screen is drawn they are moved where the collector does not look
(`gc.freeze`); later passes walk only what came after.

Once a process: objects freed by their reference count are freed as before, but a cycle among frozen objects is
never collected, so what start-up made and later drops (the first footer keys, say) stays, once; a second app in
the same process (the test suite) freezes nothing more.
"""

from __future__ import annotations

import gc

_frozen = False


def freeze_start_up() -> int:
    """Move every object alive now out of the collector's passes, the first time; returns how many are frozen."""
    global _frozen
    if not _frozen:
        _frozen = True
        gc.freeze()
    return gc.get_freeze_count()
