"""What reading the history back from a managed router's log costs per model change: the whole run's last
LOG_LINES matching lines parsed again (as before), against only the lines written since the last read (a cursor).

Synthetic lines in this llama-server build's format: load, unload, exit and the child's "model loaded", 4 a cycle.

Run: python -m bench.history_readback [CYCLES]
"""

from __future__ import annotations

import sys
import time

from app.services.history_backfill import LOG_LINES
from app.services.history_reasons import run_reasons, transitions


def stamp(us: int) -> str:
    m, rest = divmod(us, 60_000_000)
    s, rest = divmod(rest, 1_000_000)
    ms, u = divmod(rest, 1000)
    return f"{m}.{s:02d}.{ms:03d}.{u:03d}"


def run_lines(cycles: int) -> list[str]:
    out: list[str] = []
    t = 0
    for i in range(cycles):
        port = 40_000 + i % 20_000
        for text in (f"load: spawning server instance with name=alpha on port {port}",
                     "unload: stopping model instance name=alpha",
                     "run: instance name=alpha exited with status 0"):  # fmt: skip
            t += 700_000
            out.append(f"{stamp(t)} I srv  {text}")
        out.append(f"[{port}] 0.00.100.000 I srv  llama_server: model loaded")
    return out


def main(cycles: int) -> None:
    lines = run_lines(cycles)[-LOG_LINES:]
    t0 = time.process_time()
    transitions(lines)
    whole = time.process_time() - t0
    parser, _ = run_reasons(lines[:-4])
    t0 = time.process_time()
    parser.feed_more(lines[-4:])
    more = time.process_time() - t0
    print(f"one read of the run's last {len(lines):,} lines (before): {whole * 1000:.0f} ms CPU")
    print(f"one read of the 4 lines one change wrote (now): {more * 1000:.2f} ms CPU")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5_000)
