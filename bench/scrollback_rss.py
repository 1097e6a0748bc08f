"""What a log line costs in the panel, as RSS through the UI: the real LogPanel in a headless app at 140x45.

Router-shaped lines (the kinds a real router writes under a load/completion/unload cycle, numbers varied) are
appended in batches of 50, as the fleet's follower sends them: WARM lines first (render caches
and allocator pools fill), then N more, following (the rows painted as they come) and then the same again paused.
Printed: RSS growth per line for each.

With `wrap`, the panel wraps its lines (`W`) as they come.

Run: python -m bench.scrollback_rss [N] [WARM] [wrap]
"""

from __future__ import annotations

import asyncio
import gc
import sys

import psutil
from textual.app import App, ComposeResult

from app.services.core.log_lines import LogLine
from app.services.logs.parse import LogAttributor
from app.ui.dashboard.log_panel import LogPanel
from app.ui.text.glyphs import UNICODE

SHAPES = (
    "{t} I srv  proxy_reques: proxying request to model chat-small on port {port}",
    "[{port}] {t} I slot launch_slot_: id  0 | task {i} | processing task",
    "[{port}] {t} I slot print_timing: id  0 | task {i} |        eval time =       {ms}.{f2} ms /    {n} tokens "
    "(    0.{f2} ms per token,  {tps}.07 tokens per second)",
    "[{port}] {t} I slot      release: id  0 | task {i} | stop processing: n_tokens = {n}, truncated = 0",
    "{t} I srv  log_server_r: request: POST /completion 127.0.0.1 200",
    "[{port}] {t} I srv  update_slots: all slots are idle",
    "{t} I srv          load: spawning server instance with name=chat-small on port {port}",
    "{t} I srv          load:   --model",
    "[{port}] {t} I cmn          init: llama threadpool init, n_threads = 2",
    "[{port}] {t} I srv  llama_server: model loaded",
    "{t} I srv           run: instance name=chat-small exited with status 0",
)


WRAP = {"on": False}


def router_lines(n: int, start: int, att: LogAttributor) -> list[LogLine]:
    out = []
    for i in range(start, start + n):
        t = f"{i // 60000 % 10}.{i // 1000 % 60:02d}.{i % 1000:03d}.{i * 7 % 1000:03d}"
        shape = SHAPES[i % len(SHAPES)]
        raw = shape.format(t=t, port=33000 + i // 44 % 9, i=i, ms=i % 97, f2=f"{i % 100:02d}", n=i % 64, tps=i % 5000)
        out.append(att.parse(raw))
    return out


class One(App[None]):
    def __init__(self, max_lines: int) -> None:
        super().__init__()
        self.max_lines = max_lines

    def compose(self) -> ComposeResult:
        yield LogPanel(UNICODE, self.max_lines)


def rss() -> int:
    gc.collect()
    return int(psutil.Process().memory_info().rss)


async def feed(panel: LogPanel, att: LogAttributor, start: int, n: int) -> None:
    """As the follower sends them: a batch every LOG_FLUSH_EVERY (0.1 s), painted at most every PAINT_EVERY. Each
    batch is parsed when it is sent, as the follower does (parsed all at once, the lines waiting to be sent were
    most of what RSS grew by)."""
    for k in range(start, start + n, 50):
        panel.append(router_lines(50, k, att))
        await asyncio.sleep(0.1)


async def main(n: int, warm: int) -> None:
    total = warm + 2 * n
    app = One(total)
    async with app.run_test(size=(140, 45)) as pilot:
        panel = app.query_one(LogPanel)
        panel.set_source("bench", [])
        if WRAP["on"]:
            panel.action_toggle_wrap()
        att = LogAttributor()
        await feed(panel, att, 0, warm)
        await pilot.pause(0.3)
        r0 = rss()
        await feed(panel, att, warm, n)
        await pilot.pause(0.3)
        r1 = rss()
        panel.following = False
        await pilot.pause(0.1)
        await feed(panel, att, warm + n, n)
        await pilot.pause(0.3)
        r2 = rss()
        chars = sum(len(ln.raw) for ln in panel.buffer) / len(panel.buffer)
        print(f"{len(panel.buffer):,} lines in the panel ({chars:.0f} characters each on average)")
        print(f"following: {(r1 - r0) / n:.0f} bytes of RSS a line ({n:,} lines after {warm:,} of warm-up)")
        print(f"paused:    {(r2 - r1) / n:.0f} bytes of RSS a line ({n:,} more)")
        print(f"10,000 lines followed: {(r1 - r0) / n * 10_000 / 2**20:.2f} MB")


if __name__ == "__main__":
    WRAP["on"] = "wrap" in sys.argv[1:]
    args = [int(a) for a in sys.argv[1:] if a != "wrap"]
    asyncio.run(main(args[0] if args else 8000, args[1] if len(args) > 1 else 2000))
