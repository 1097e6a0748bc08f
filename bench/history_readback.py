"""What reading the history back from a managed router's log costs per model change: the whole run's last
LOG_LINES matching lines parsed again (as before), against only the lines written since the last read (a cursor).

Synthetic lines in this llama-server build's format: load, unload, exit and the child's "model loaded", 4 a cycle.
And the read of the bytes one change wrote (its 4 lines among 30 of a child's chatter) from a log file on this
machine: the shell pipeline (as a remote log is read) against the in-process read (log_matches.py), CPU of this
process and of the commands it waited for.

Run: python -m bench.history_readback [CYCLES]
"""

from __future__ import annotations

import asyncio
import resource
import sys
import time

from app.services.core.bounded import MAX_LOG_LINE
from app.services.history.backfill import _READ, LOG_BYTES, LOG_LINES
from app.services.history.log_readback import read_matches
from app.services.history.reasons import LOG_PATTERN, run_reasons, transitions
from app.services.hosts.local import LocalTransport
from bench.common import workdir


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


def cpu_ms() -> tuple[float, float]:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return (me.ru_utime + me.ru_stime) * 1000, (kids.ru_utime + kids.ru_stime) * 1000


async def read_costs(lines: list[str], rounds: int = 200) -> None:
    chatter = [f"[40000] 0.00.{i:03d}.000 I slot update_slots: id  0 | task 1 | n_past = {i}" for i in range(30)]
    log = workdir() / "router.log"
    log.write_text("\n".join(lines + chatter) + "\n")
    since = log.stat().st_size - len("\n".join(lines[-4:] + chatter)) - 1
    args = [str(log), str(since), str(LOG_BYTES), LOG_PATTERN, str(LOG_LINES), str(MAX_LOG_LINE)]
    t = LocalTransport()
    me0, kids0 = cpu_ms()
    for _ in range(rounds):
        await t.run(["sh", "-c", _READ, "sh", *args])
    me1, kids1 = cpu_ms()
    for _ in range(rounds):
        await asyncio.to_thread(read_matches, str(log), since, LOG_BYTES, LOG_PATTERN, LOG_LINES, MAX_LOG_LINE)
    me2, _ = cpu_ms()
    print(f"reading one change's {log.stat().st_size - since:,} bytes from a {log.stat().st_size / 2**20:.1f} MiB log: "
          f"shell pipeline {(me1 - me0) / rounds:.2f} ms CPU here + {(kids1 - kids0) / rounds:.2f} ms in its "
          f"commands; in-process {(me2 - me1) / rounds:.2f} ms CPU")  # fmt: skip


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
    asyncio.run(read_costs(lines))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5_000)
