"""The hand-written HTTP/1.1 GETs of router/http1.py against h11 driving the same asyncio streams, and httpx for
reference, on a real router: CPU (this process) and wall time per request, medians (and 95th percentiles).

  kept /health         KeptGet (hand-written) | h11 on one kept connection | httpx.AsyncClient keeping one
  fresh-conn /metrics  plain_get (hand-written) | h11, one connection per GET | httpx.AsyncClient keeping none

/metrics is a loaded tiny model's, proxied by the router (`Connection: close`, chunked: the activity poll's path).
The h11 clients keep the module's bounds (head size, body limit, time) so that they do the same work; the variants
are run in turns, in rounds, so that a change in the machine's load falls on all of them alike.

Run: python -m bench.http1_h11 [--requests 3000] [--rounds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import time
from collections.abc import Awaitable, Callable
from importlib import metadata

import h11
import httpx
import psutil

from app.services.activity.metrics import METRICS_LIMIT
from app.services.core.bounded import MAX_JSON_BYTES, mib
from app.services.core.errors import AnswerTooBig, BadAnswer, RouterNotAnswering, RouterRefused, RouterUnreachable
from app.services.lifecycle.llama_server_binary import HOW_TO_GET, find_llama_server
from app.services.router.http1 import MAX_HEAD, KeptGet, plain_get
from app.services.router.parse import error_message
from bench.common import tiny_models, workdir
from tests.helpers.router import RouterProc, preset_text

Get = Callable[[], Awaitable[bytes]]
METRICS = "/metrics?model=alpha&autoload=false"


class H11Get:
    """h11 parsing the answers on asyncio streams, one kept connection (`keep`) or one per GET, within the same
    bounds as router/http1.py: the head in MAX_HEAD (h11's max_incomplete_event_size), the body in `limit`, the
    whole exchange in `timeout`."""

    def __init__(self, host: str, port: int, keep: bool) -> None:
        self.host, self.port, self.keep = host, port, keep
        self._conn: tuple[asyncio.StreamReader, asyncio.StreamWriter, h11.Connection] | None = None

    def close(self) -> None:
        if self._conn is not None:
            self._conn[1].close()
            self._conn = None

    async def get(self, path: str, limit: int, timeout: float, what: str) -> bytes:
        try:
            async with asyncio.timeout(timeout):
                status, body = await self._ask(path, limit, what)
        except TimeoutError:
            self.close()
            raise RouterNotAnswering(f"{what}: router not answering (no answer within {timeout:g} s)") from None
        except h11.RemoteProtocolError as e:
            self.close()
            raise BadAnswer(f"{what}: {e}") from None
        except OSError as e:
            self.close()
            raise RouterUnreachable(f"{what}: {e or type(e).__name__}") from None
        except BaseException:
            self.close()
            raise
        if status >= 400:
            raise RouterRefused(status, error_message(body.decode("utf-8", errors="replace")), "GET", path)
        return body

    async def _ask(self, path: str, limit: int, what: str) -> tuple[int, bytes]:
        for attempt in (1, 2):
            if self._conn is not None and self._conn[0].at_eof():
                self.close()
            reused = self._conn is not None
            if self._conn is None:
                reader, writer = await asyncio.open_connection(self.host, self.port, limit=MAX_HEAD)
                self._conn = (reader, writer, h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD))
            reader, writer, conn = self._conn
            headers = [("Host", f"{self.host}:{self.port}")] + ([] if self.keep else [("Connection", "close")])
            writer.write(
                conn.send(h11.Request(method="GET", target=path, headers=headers)) + conn.send(h11.EndOfMessage())
            )
            status, body, fresh = 0, bytearray(), True
            while True:
                ev = conn.next_event()
                if ev is h11.NEED_DATA:
                    data = await reader.read(65536)
                    if not data and fresh and reused and attempt == 1:
                        break  # closed by the router before it read this request: once more, on a new connection
                    conn.receive_data(data)
                    fresh = fresh and not data
                    continue
                if isinstance(ev, h11.Response):
                    status = ev.status_code
                elif isinstance(ev, h11.Data):
                    body += ev.data
                    if len(body) > limit:
                        raise AnswerTooBig(f"{what}: the answer passed the {mib(limit)} limit; stopped reading")
                elif isinstance(ev, h11.EndOfMessage):
                    if conn.our_state is h11.DONE and conn.their_state is h11.DONE and self.keep:
                        conn.start_next_cycle()
                    else:
                        self.close()
                    return status, bytes(body)
                elif isinstance(ev, h11.ConnectionClosed):
                    raise RouterUnreachable(f"{what}: the router closed the connection before its answer's end")
            self.close()
        raise AssertionError("unreachable")


def cpu_and_wall(samples: list[tuple[float, float]]) -> str:
    cpu = sorted(c for c, _ in samples)
    wall = sorted(w for _, w in samples)

    def p95(s: list[float]) -> float:
        return s[min(len(s) - 1, round(0.95 * (len(s) - 1)))]

    return (
        f"CPU median {statistics.median(cpu):6.0f} µs (p95 {p95(cpu):6.0f}), "
        f"wall median {statistics.median(wall):6.0f} µs (p95 {p95(wall):6.0f})"
    )


async def timed(get: Get, n: int, into: list[tuple[float, float]]) -> None:
    for _ in range(n):
        c0, w0 = time.process_time_ns(), time.perf_counter_ns()
        await get()
        into.append(((time.process_time_ns() - c0) / 1000, (time.perf_counter_ns() - w0) / 1000))


async def compare(title: str, variants: dict[str, Get], n: int, rounds: int) -> None:
    for get in variants.values():  # connections made, caches warm: not in the figures
        for _ in range(50):
            await get()
    samples: dict[str, list[tuple[float, float]]] = {k: [] for k in variants}
    for _ in range(rounds):
        for name, get in variants.items():
            await timed(get, max(1, n // rounds), samples[name])
    print(f"{title} ({len(next(iter(samples.values())))} requests each):")
    for name, s in samples.items():
        print(f"  {name:<28} {cpu_and_wall(s)}")


async def main(n: int, rounds: int) -> None:
    d = workdir()
    models = tiny_models(d)
    (d / "r.ini").write_text(preset_text({"alpha": models["alpha"]}))
    binary = find_llama_server()
    if binary is None:
        raise SystemExit(HOW_TO_GET)
    router = RouterProc(binary=binary, preset=d / "r.ini", log=d / "r.log", extra_args=["--metrics"]).start()
    host, port, what = "127.0.0.1", router.port, "bench: GET"
    kept, h11_kept, h11_fresh = KeptGet(host, port, {}), H11Get(host, port, keep=True), H11Get(host, port, keep=False)
    try:
        async with httpx.AsyncClient(base_url=router.url, timeout=30) as http:
            await http.post("/models/load", json={"model": "alpha"})
        await asyncio.to_thread(router.wait_model, "alpha", {"loaded"}, 120.0)
        # The same answers from each: a check that the h11 clients read what the module reads.
        health = await kept.get("/health", MAX_JSON_BYTES, 5, what)
        assert health == await h11_kept.get("/health", MAX_JSON_BYTES, 5, what)
        hand = await plain_get(host, port, METRICS, {}, METRICS_LIMIT, 5, what)
        by_h11 = await h11_fresh.get(METRICS, METRICS_LIMIT, 5, what)
        assert hand.splitlines()[:3] == by_h11.splitlines()[:3] and len(hand) == len(by_h11), (hand, by_h11)
        print(
            f"router {router.url}, {psutil.cpu_count()} cores, load average {psutil.getloadavg()[0]:.1f}; "
            f"h11 {metadata.version('h11')}, httpx {httpx.__version__}; /health {len(health)} B, /metrics {len(hand)} B"
        )
        async with (
            httpx.AsyncClient(base_url=router.url, timeout=5,
                              limits=httpx.Limits(max_connections=1, max_keepalive_connections=1)) as probe,
            httpx.AsyncClient(base_url=router.url, timeout=5,
                              limits=httpx.Limits(max_keepalive_connections=0)) as fresh,
        ):  # fmt: skip

            async def httpx_get(client: httpx.AsyncClient, path: str) -> bytes:
                r = await client.get(path)
                r.raise_for_status()
                return r.content

            await compare(
                "kept connection, GET /health",
                {
                    "hand-written (KeptGet)": lambda: kept.get("/health", MAX_JSON_BYTES, 5, what),
                    "h11": lambda: h11_kept.get("/health", MAX_JSON_BYTES, 5, what),
                    "httpx (one kept)": lambda: httpx_get(probe, "/health"),
                },
                n,
                rounds,
            )
            await compare(
                "one connection per GET, a loaded model's /metrics",
                {
                    "hand-written (plain_get)": lambda: plain_get(host, port, METRICS, {}, METRICS_LIMIT, 5, what),
                    "h11": lambda: h11_fresh.get(METRICS, METRICS_LIMIT, 5, what),
                    "httpx (none kept)": lambda: httpx_get(fresh, METRICS),
                },
                n,
                rounds,
            )
    finally:
        for c in (kept, h11_kept, h11_fresh):
            c.close()
        router.stop()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--requests", type=int, default=3000, help="per variant and path")
    ap.add_argument("--rounds", type=int, default=10, help="turns the requests are split into")
    a = ap.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main(a.requests, a.rounds))
