"""Asking and probing a real router: `llamaherd ask` and `llamaherd probe` as a user runs them, the ask service's
stream, its cancel, and a wedged child (SIGSTOP) told apart from one that answers."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from app.services.ask.answer import Answer, Piece, ask
from app.services.ask.conversation import Conversation, Turn
from app.services.ask.probe import PROBE_WITHIN
from app.services.hosts.process_tree import descendants
from app.services.router.client import RouterClient
from tests.conftest import RouterFactory
from tests.helpers.delay_proxy import DelayProxy
from tests.helpers.router import RouterProc
from tests.helpers.wait import wait_for

KEY = "ask-key"
LONG = {"ignore_eos": True}  # a random tiny model may end its answer after any token: to the length asked


def write_config(tmp_path: Path, url: str, name: str = "config.toml") -> Path:
    cfg = tmp_path / name
    cfg.write_text(f'[[machines]]\nname = "box"\nurl = "{url}"\napi_key_env = "ASK_KEY"\n')
    return cfg


def herd(cfg: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", "--config", str(cfg), *args],
        capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
        env={**os.environ, "ASK_KEY": KEY},
    )  # fmt: skip


@pytest.fixture
def keyed(make_router: RouterFactory) -> RouterProc:
    return make_router(extra_args=["--api-key", KEY, "--metrics"], env={"TEST_ROUTER_KEY": KEY})


def child_of(router: RouterProc, model: str) -> int:
    """The pid of the router's child serving `model` (from the router's process tree)."""
    for pid in descendants(router.pid):
        with contextlib.suppress(psutil.Error):
            if f"--alias {model} " in " ".join(psutil.Process(pid).cmdline()) + " ":
                return pid
    raise AssertionError(f"no child for {model} under {router.pid}")


@contextlib.contextmanager
def stopped(pid: int) -> Iterator[None]:
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def test_ask_json_fields_present_and_positive(keyed: RouterProc, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, keyed.url)
    r = herd(cfg, "ask", "box", "alpha", "hello", "--max-tokens", "16", "--json", "--load")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert isinstance(out["text"], str) and out["text"]
    for k in ("ttft_ms", "tokens_per_s", "prompt_tokens", "completion_tokens"):
        assert out[k] > 0, (k, out)
    assert out["completion_tokens"] <= 16
    # plain output: the reply as text (control characters made visible), the figures on stderr
    r = herd(cfg, "ask", "box", "alpha", "hello", "--max-tokens", "64")
    assert r.returncode == 0, r.stderr
    assert not any(ord(c) < 32 and c not in "\n\t" for c in r.stdout), r.stdout
    assert "first token" in r.stderr and "tokens/s" in r.stderr


def test_not_loaded_is_refused_without_a_terminal_and_loaded_with_load(keyed: RouterProc, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, keyed.url)
    r = herd(cfg, "ask", "box", "beta", "hi", "--max-tokens", "4")
    assert r.returncode == 1 and "--load" in r.stderr and "unloaded" in r.stderr, r.stderr
    assert keyed.wait_model("beta", {"unloaded"}, timeout=2)["status"]["value"] == "unloaded"  # type: ignore[index]
    r = herd(cfg, "probe", "box", "beta")  # named but not loaded: never loaded by a probe
    assert r.returncode == 1 and "not probed" in r.stdout, r.stdout
    keyed.wait_model("beta", {"unloaded"}, timeout=2)
    r = herd(cfg, "ask", "box", "beta", "hi", "--max-tokens", "4", "--load")
    assert r.returncode == 0, r.stderr
    assert "loading beta" in r.stderr
    keyed.wait_model("beta", {"loaded"}, timeout=5)


def test_an_image_to_a_model_without_vision_is_refused_and_nothing_is_sent(keyed: RouterProc, tmp_path: Path) -> None:
    image = tmp_path / "photo.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(200_000))
    direct = write_config(tmp_path, keyed.url)
    assert herd(direct, "load", "box", "alpha", "--wait").returncode == 0
    with DelayProxy("127.0.0.1", keyed.port, one_way=0.0) as proxy:
        cfg = write_config(tmp_path, f"http://127.0.0.1:{proxy.port}", "through-proxy.toml")
        r = herd(cfg, "ask", "box", "alpha", "what is this?", "--image", str(image))
        assert r.returncode == 1 and "alpha has no vision" in r.stderr, r.stderr
        assert proxy.bytes_up < 10_000, proxy.bytes_up  # the list and props asked; the 200 KB picture never sent
    big = tmp_path / "big.png"
    big.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(11 * 1024 * 1024))
    r = herd(direct, "ask", "box", "alpha", "hi", "--image", str(big))
    assert r.returncode == 2 and "bigger than the 10 MiB" in r.stderr, r.stderr
    r = herd(direct, "ask", "box", "nope", "hi")
    assert r.returncode == 1 and "no model named 'nope'" in r.stderr, r.stderr


async def test_pieces_arrive_before_the_end_and_closing_stops_the_server(keyed: RouterProc) -> None:
    async with RouterClient(keyed.url, api_key=KEY) as c:
        await c.load("alpha")
        await wait_for(lambda: keyed.wait_model("alpha", {"loaded"}) is not None, 30, what="alpha loaded")
        conv = Conversation("alpha", turns=[Turn("user", "a long story please")])
        pieces: list[Piece] = []
        ended: list[float] = []
        async for item in ask(c, conv, False, max_tokens=100, extra=LONG):
            if isinstance(item, Piece):
                pieces.append(item)
            else:
                assert isinstance(item, Answer) and item.text == "".join(p.text for p in pieces)
                ended.append(time.monotonic())
        assert len(pieces) > 10 and pieces[0].at < pieces[-1].at < ended[0]
        assert pieces[-1].at - pieces[0].at > 0  # handed on one by one, not all at the end
        # a second turn carries the first again
        conv.turns += [Turn("assistant", "".join(p.text for p in pieces)), Turn("user", "and then?")]
        stream = ask(c, conv, False, max_tokens=100_000, extra=LONG)
        first = await stream.__anext__()
        assert isinstance(first, Piece)
        await stream.aclose()  # Esc / Ctrl+C: the stream is closed mid-answer

        async def idle() -> bool:
            text = await c.child_metrics("alpha", 256 * 1024)
            return "llamacpp:requests_processing 0" in text

        await wait_for(idle, 5, what="the server stopped generating once the stream was closed")


@pytest.mark.timing
def test_probe_tells_a_wedged_child_within_its_bound(keyed: RouterProc, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, keyed.url)
    assert herd(cfg, "load", "box", "alpha", "--wait").returncode == 0
    r = herd(cfg, "probe", "box", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert [(p["model"], p["answering"]) for p in json.loads(r.stdout)] == [("alpha", True)]
    with stopped(child_of(keyed, "alpha")):
        assert keyed.wait_model("alpha", {"loaded"})  # the router still lists it loaded
        t0 = time.monotonic()
        r = herd(cfg, "probe", "box")
        took = time.monotonic() - t0
        assert r.returncode == 1 and "alpha: NOT ANSWERING" in r.stdout, r.stdout + r.stderr
        assert took < PROBE_WITHIN + 5, took
    r = herd(cfg, "probe", "box", "alpha")
    assert r.returncode == 0 and "alpha: answering" in r.stdout, r.stdout + r.stderr


def test_wedged_child_to_each_endpoint(keyed: RouterProc) -> None:
    """What a stopped child looks like from outside: the router's own answers are fine, every proxied one hangs."""

    async def look() -> dict[str, str]:
        async with RouterClient(keyed.url, api_key=KEY, timeout=1.5) as c:
            seen: dict[str, str] = {}
            seen["models"] = next(m.state.value for m in await c.models() if m.id == "alpha")
            seen["health"] = "ok" if await c.health() else "?"
            for name, call in (
                ("metrics", c.child_metrics("alpha", 256 * 1024, timeout=1.5)),
                ("slots", c.child_slots("alpha", 256 * 1024, timeout=1.5)),
            ):
                try:
                    await call
                    seen[name] = "answered"
                except Exception as e:  # what it raised is the finding
                    seen[name] = type(e).__name__
            return seen

    herd_load = asyncio.run

    async def load() -> None:
        async with RouterClient(keyed.url, api_key=KEY) as c:
            await c.load("alpha")

    herd_load(load())
    keyed.wait_model("alpha", {"loaded"})
    with stopped(child_of(keyed, "alpha")):
        seen = asyncio.run(look())
    assert seen == {"models": "loaded", "health": "ok", "metrics": "RouterNotAnswering", "slots": "RouterNotAnswering"}
