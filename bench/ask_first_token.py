"""A streamed answer's pieces, from the router's socket to the consumer of the ask service (app/services/ask).

A loopback relay in this process stands between the ask service and a real router with a tiny model: it stamps each
read of the router's answer that carries reply text (one SSE event per token, "content":"..."), and the consumer
stamps each Piece as it gets it; the k-th stamped piece of text is matched to the k-th piece. The relay's own
forwarding (one more loopback hop) is inside the figure, so it is an upper bound. Also: the first piece alone (what
an operator waits for after the server sent it), time to first token as the ask service reports it, and the
same path on through the ask pane of the real app (headless) to the refresh that paints each piece.

Run: python -m bench.ask_first_token [N_ASKS]
"""

from __future__ import annotations

import asyncio
import sys
import time

from textual.widgets import Input, Log

from app.config import Config, MachineConfig
from app.services.ask.answer import Answer, Piece, ask
from app.services.ask.conversation import Conversation, Turn
from app.services.fleet import Fleet
from app.services.router.client import RouterClient
from app.ui.app import make_app
from app.ui.screens.ask import AskScreen
from bench.common import figures, start_router, tiny_models, workdir

MARK = b'"content":"'
EMPTY = b'"content":""'  # no piece is handed on for an empty one


class StampingRelay:
    """TCP relay client -> router; every read from the router that carries reply text is stamped."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.stamps: list[float] = []
        self.server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def _serve(self, cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        rr, rw = await asyncio.open_connection("127.0.0.1", self.port)

        async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter, stamp: bool) -> None:
            carry = b""  # a mark split across two reads is counted once, when its second part arrives
            try:
                while data := await src.read(65536):
                    if stamp:
                        now = time.perf_counter()
                        seen = carry + data
                        self.stamps += [now] * (seen.count(MARK) - seen.count(EMPTY))
                        carry = seen[-(len(MARK) - 1) :]
                        if MARK[:1] not in carry:
                            carry = b""
                    dst.write(data)
                    await dst.drain()
            except ConnectionError:
                pass
            finally:
                dst.close()

        try:
            await asyncio.gather(pump(cr, rw, False), pump(rr, cw, True))
        except asyncio.CancelledError:  # the run ends with the router's keep-alive connection still open
            cw.close()
            rw.close()

    def close(self) -> None:
        if self.server is not None:
            self.server.close()


async def main(n: int) -> None:
    d = workdir()
    router = start_router(d, {k: v for k, v in tiny_models(d).items() if k != "broken"})
    try:
        relay = StampingRelay(router.port)
        port = await relay.start()
        each: list[float] = []
        first: list[float] = []
        ttft: list[float] = []
        async with RouterClient(f"http://127.0.0.1:{port}") as c:
            await c.load("alpha")
            await asyncio.to_thread(router.wait_model, "alpha", {"loaded"})
            for i in range(n):
                relay.stamps.clear()
                got: list[float] = []
                conv = Conversation("alpha", turns=[Turn("user", f"question {i}")])
                async for item in ask(c, conv, False, max_tokens=64, clock=time.perf_counter):
                    if isinstance(item, Piece):
                        got.append(time.perf_counter())
                    elif isinstance(item, Answer) and item.figures.ttft_ms is not None:
                        ttft.append(item.figures.ttft_ms)
                # the first read stamped may be the role chunk ("content":null has no quote): only text counts
                pairs = list(zip(relay.stamps, got, strict=False))
                each += [(g - s) * 1000 for s, g in pairs]
                if pairs:
                    first.append((pairs[0][1] - pairs[0][0]) * 1000)
        relay.close()
        print(figures("ask: piece from the router's socket to the consumer", each))
        print(figures("ask: first piece from the router's socket to the consumer", first))
        print(figures("ask: time to first token as reported (send -> first piece)", ttft))
        screen_each, screen_first = await to_screen(router.port, max(5, n // 2))
        print(figures("ask pane: piece from the router's socket to painted", screen_each))
        print(figures("ask pane: first piece from the router's socket to painted", screen_first))
    finally:
        router.stop()


async def to_screen(router_port: int, n: int) -> tuple[list[float], list[float]]:
    """The same through the real app (headless): a piece is stamped after the refresh that paints it."""
    relay = StampingRelay(router_port)
    port = await relay.start()
    cfg = Config(machines=(MachineConfig(name="bench", url=f"http://127.0.0.1:{port}"),))
    fleet = Fleet(cfg)
    app = make_app(cfg, fleet)
    each: list[float] = []
    first: list[float] = []
    async with app.run_test(size=(120, 40)) as pilot:
        screen = AskScreen(fleet, "bench", "alpha", False)
        screen.max_tokens = 24  # several turns within the tiny model's 256-token context
        await app.push_screen(screen)
        log = screen.query_one(Log)
        painted: list[float] = []
        write = log.write

        def stamped(data: str, scroll_end: bool | None = None) -> Log:
            out = write(data, scroll_end)
            if screen.answering:
                log.call_after_refresh(lambda: painted.append(time.perf_counter()))
            return out

        log.write = stamped  # type: ignore[method-assign]
        for i in range(n):
            screen.conv.turns.clear()  # one question each: the context stays small
            relay.stamps.clear()
            painted.clear()
            screen.query_one(Input).value = f"question {i}"
            await screen.query_one(Input).action_submit()
            # The question sent, then its answer done: watched with plain sleeps, since each pilot.pause() posts to
            # every widget and forces a screen update, work of the bench's own in the loop that paints the pieces.
            while len(screen.conv.turns) < 2 or screen.answering:
                await asyncio.sleep(0.01)
            await pilot.pause(0.05)
            pairs = list(zip(relay.stamps, painted, strict=False))
            each += [(p - s) * 1000 for s, p in pairs]
            if pairs:
                first.append((pairs[0][1] - pairs[0][0]) * 1000)
    relay.close()
    return each, first


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 50))
