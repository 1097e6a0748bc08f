"""Getting a model onto a local machine: search, pull through the real router's download child from the hub
stand-in, each failure ending with its cause, cancel, and rm. The router is started by `llamaherd start`, so it
gets the machine's hub settings (MODEL_ENDPOINT, LLAMA_CACHE, HF_TOKEN) the way an operator's would."""

from __future__ import annotations

import contextlib
import json
import shlex
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.helpers.herd import Herd, local_config
from tests.helpers.hub_standin import (
    TINY_REPO,
    VISION_REPO,
    HubStandin,
    closed_hub,
    commit_of,
)
from tests.helpers.tmpfs import tmpfs
from tests.helpers.tmux import Tmux
from tests.helpers.wait import wait_for_sync

# Shaped like a Hugging Face token: this llama-server sends no other shape to the hub's API ("W api_get: invalid
# token, authentication disabled"), and a gated hub then refuses.
TOKEN = "hf_TestTokenThatMustStaySecret0123456"
Q4 = f"{TINY_REPO}:Q4_K_M"


def configure(herd: Herd, hub_url: str, cache: Path, **extra: object) -> None:
    preset = herd.root / "models.ini"
    herd.write_config(local_config("here", preset, hub=hub_url, hub_cache=str(cache), **extra))


def started(herd: Herd) -> int:
    r = herd.run("start", "here")
    assert r.returncode == 0, r.stderr
    rec = herd.record()
    assert rec is not None
    return int(str(rec["pid"]))


def cache_ggufs(cache: Path) -> list[str]:
    return sorted(str(p.relative_to(cache)) for p in cache.rglob("*.gguf"))


def test_router_gets_hub_settings_in_its_environment_not_its_argv(herd: Herd, hub: HubStandin) -> None:
    cache = herd.root / "hf cache"
    configure(herd, hub.url, cache, hub_token_env="TEST_HUB_TOKEN")
    herd.extra_env["TEST_HUB_TOKEN"] = TOKEN
    pid = started(herd)
    env = dict(item.split("=", 1) for item in Path(f"/proc/{pid}/environ").read_text().split("\0") if "=" in item)
    assert env["MODEL_ENDPOINT"] == hub.url
    assert env["LLAMA_CACHE"] == str(cache)
    assert env["HF_TOKEN"] == TOKEN
    assert TOKEN not in " ".join(psutil.Process(pid).cmdline())
    rec = herd.record()
    assert rec is not None and rec["hub"] == f"hub={hub.url} cache={cache} token=set"
    token_file = herd.state_home / "llamaherd" / "routers" / "default" / "hub.token"
    assert token_file.stat().st_mode & 0o777 == 0o600
    r = herd.run("status", "here")
    assert TOKEN not in r.stdout + r.stderr


def test_start_refuses_a_missing_token_variable(herd: Herd, hub: HubStandin) -> None:
    configure(herd, hub.url, herd.root / "cache", hub_token_env="TEST_HUB_TOKEN_UNSET")
    r = herd.run("start", "here")
    assert r.returncode == 1
    assert "TEST_HUB_TOKEN_UNSET" in r.stderr and "not set" in r.stderr
    assert not herd.router_pids()


def test_adopted_router_without_the_settings_says_so(herd: Herd, hub: HubStandin) -> None:
    with closed_hub() as old_url:  # traffic stays on loopback: the router's own hub is one that refuses
        configure(herd, old_url, herd.root / "cache")
        started(herd)
        configure(herd, hub.url, herd.root / "cache")  # the settings changed after the start
        r = herd.run("pull", "here", Q4, timeout=60)
    assert f"note: the router on here was started with hub={old_url}" in r.stderr
    assert f"the settings now say hub={hub.url}" in r.stderr and "restart it" in r.stderr
    assert r.returncode == 1 and "cannot be reached from here" in r.stderr


def test_search_repos_and_a_repos_quants_with_fit(herd: Herd, hub: HubStandin, hub_root: Path) -> None:
    configure(herd, hub.url, herd.root / "cache")
    started(herd)
    r = herd.run("search", "here", "gguf")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0] == TINY_REPO and VISION_REPO in r.stdout
    r = herd.run("search", "here", VISION_REPO, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    quants = {q["quant"]: q for q in out["quants"]}
    assert set(quants) == {"Q4_K_M", "Q8_0"}
    shards = [hub_root / VISION_REPO / f for f in quants["Q4_K_M"]["files"]]
    assert [p.name for p in shards] == ["vis-Q4_K_M-00001-of-00002.gguf", "vis-Q4_K_M-00002-of-00002.gguf"]
    assert quants["Q4_K_M"]["size"] == sum(p.stat().st_size for p in shards)
    assert all(q["verdict"] == "fits" for q in quants.values()), quants
    assert [v["file"] for v in out["vision"]] == ["mmproj-vis-F16.gguf"]
    # the headers were read with Range requests; no file was downloaded whole
    gets = [x for x in hub.requests if "/resolve/" in x]
    assert gets and all("Range: bytes=0-" in x for x in gets), gets
    r = herd.run("search", "here", VISION_REPO)
    assert "Q4_K_M" in r.stdout and "(2 files)" in r.stdout and "fits" in r.stdout
    assert "vision companion: mmproj-vis-F16.gguf" in r.stdout


def test_search_an_unreachable_hub_says_so(herd: Herd) -> None:
    with closed_hub() as url:
        configure(herd, url, herd.root / "cache")
        r = herd.run("search", "here", "tiny")
    assert r.returncode == 1
    assert "cannot be reached from here" in r.stderr and "pull by name" in r.stderr


def test_pull_then_load_then_rm(herd: Herd, hub: HubStandin, hub_root: Path) -> None:
    cache = herd.root / "cache"
    configure(herd, hub.url, cache)
    started(herd)
    r = herd.run("pull", "here", f"{TINY_REPO}:q4_k_m", timeout=90)
    assert r.returncode == 0, r.stderr
    assert f"pulled: {Q4} is in the router's list" in r.stdout
    assert cache_ggufs(cache) == [f"models--tiny--Tiny-GGUF/snapshots/{commit_of(TINY_REPO)}/tiny-Q4_K_M.gguf"]
    got = (cache / cache_ggufs(cache)[0]).read_bytes()
    assert got == (hub_root / TINY_REPO / "tiny-Q4_K_M.gguf").read_bytes()
    r = herd.run("load", "here", Q4, "--wait", timeout=90)
    assert r.returncode == 0, r.stderr
    r = herd.run("pull", "here", Q4, timeout=60)
    assert r.returncode == 0 and "already in the router's list" in r.stdout
    r = herd.run("rm", "here", Q4, "--yes", timeout=90)
    assert r.returncode == 0, r.stderr
    assert "1 file(s) gone" in r.stdout
    assert cache_ggufs(cache) == []
    r = herd.run("models", "here", "--json")
    assert Q4 not in r.stdout
    rows = [json.loads(x) for x in herd.run("history", "here", "--json").stdout.splitlines() if x.strip()]
    mine = [(x["model"], x["reason"]) for x in rows if x["model"] == Q4 and x["reason"] in ("pulled", "removed")]
    assert mine == [(Q4, "pulled"), (Q4, "removed")], rows  # the second pull found it there: no row


def test_rm_refuses_a_preset_model_and_an_unknown_one(
    herd: Herd, hub: HubStandin, tiny_models: dict[str, Path]
) -> None:
    configure(herd, hub.url, herd.root / "cache")
    started(herd)
    name = next(iter(tiny_models))
    r = herd.run("rm", "here", name, "--yes")
    assert r.returncode == 1
    assert "not from the download cache (source: preset)" in r.stderr
    assert tiny_models[name].exists()
    r = herd.run("rm", "here", "nobody/Nothing:Q4_K_M", "--yes")
    assert r.returncode == 1 and "no model" in r.stderr
    r = herd.run("rm", "here", name)  # not a terminal, no --yes: a usage error
    assert r.returncode == 2 and "--yes" in r.stderr


FAILURES = {
    "missing repo": ("tiny/Nope-GGUF:Q4_K_M", "has no repo tiny/Nope-GGUF (404", "download_finished"),
    "missing quant": (f"{TINY_REPO}:Q5_K_S", "has no Q5_K_S file (it has: tiny-Q4_K_M.gguf, tiny-Q8_0.gguf)",
                      "download_finished"),
    "cut file": (Q4, "broke off on every try (3 attempts: Failed to read connection", "download_failed"),
    "unreachable hub": (Q4, "cannot be reached from here (Could not establish connection)", "download_finished"),
    "full disk": (Q4, "could not write the download (disk full or not writable)", "download_failed"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(FAILURES))
def test_each_failure_ends_with_its_cause(case: str, herd: Herd, hub: HubStandin, needs_root: None) -> None:
    spec, cause, router_said = FAILURES[case]
    cache = herd.root / "cache"
    if case == "cut file":
        hub.cut_at = 100_000
    with around(case, cache) as hub_url:
        configure(herd, hub_url or hub.url, cache)
        started(herd)
        r = herd.run("pull", "here", spec, "--json", timeout=120)
        herd.stop_all()
    assert r.returncode == 1, r.stdout + r.stderr
    outcome = json.loads(r.stdout.splitlines()[-1])
    assert outcome["event"] == "outcome" and not outcome["ok"]
    if case == "unreachable hub":
        cause = "cannot be reached from here"
        assert (
            "cannot be reached from here" in outcome["cause"] and "Could not establish connection" in outcome["cause"]
        )
    else:
        assert cause in outcome["cause"], outcome
    assert outcome["router_said"] == router_said
    assert f"pull failed: {outcome['cause']}" in r.stderr
    history = herd.run("history", "here", "--json").stdout
    assert json.dumps(f"pull failed: {outcome['cause']}") in history


@contextlib.contextmanager
def around(case: str, cache: Path) -> Iterator[str | None]:
    """What the case needs around the pull: an unreachable hub's address, or a full tmpfs as the cache."""
    if case == "unreachable hub":
        with closed_hub() as url:
            yield url
    elif case == "full disk":
        with tmpfs(cache, size_kib=200):
            yield None
    else:
        yield None


def test_cancel_while_downloading(herd: Herd, hub: HubStandin) -> None:
    cache = herd.root / "cache"
    hub.rate = 50_000.0  # the 451 KB file takes ~9 s: time to cancel mid-way
    configure(herd, hub.url, cache)
    started(herd)
    pull = herd.popen("pull", "here", Q4, "--json")
    try:
        assert pull.stdout is not None
        first = json.loads(pull.stdout.readline())
        assert first["event"] == "progress" and first["model"] == Q4
        r = herd.run("unload", "here", Q4)
        assert r.returncode == 0, r.stderr
        out, errs = pull.communicate(timeout=60)
    finally:
        if pull.poll() is None:
            pull.send_signal(signal.SIGKILL)
            pull.wait()
    assert pull.returncode == 1, errs
    outcome = json.loads(out.splitlines()[-1])
    assert outcome["cause"].startswith("cancelled on request"), outcome
    assert outcome["router_said"] == "download_failed"
    assert cache_ggufs(cache) == []
    assert not [p for p in cache.rglob("*.downloadInProgress")]


def test_interrupted_pull_left_running_when_not_asked(herd: Herd, hub: HubStandin) -> None:
    """Ctrl+C without a terminal to ask on: the download is left running on the router, and that is said."""
    hub.rate = 100_000.0
    configure(herd, hub.url, herd.root / "cache")
    started(herd)
    pull = herd.popen("pull", "here", Q4, "--json")
    try:
        assert pull.stdout is not None
        assert json.loads(pull.stdout.readline())["event"] == "progress"
        pull.send_signal(signal.SIGINT)
        _, errs = pull.communicate(timeout=30)
    finally:
        if pull.poll() is None:
            pull.send_signal(signal.SIGKILL)
            pull.wait()
    assert pull.returncode == 130
    assert f"left downloading on here; cancel it with `llamaherd unload here {Q4}`" in errs
    # and the router goes on with it to the end
    wait_for_sync(lambda: Q4 in herd.run("models", "here").stdout and "downloading" not in
                  herd.run("models", "here").stdout, 30, what="the download finished on the router")  # fmt: skip


def test_a_gated_hub_needs_the_token_and_the_router_passes_it(herd: Herd, hub: HubStandin) -> None:
    """The token reaches the download child (through the router's environment) and the search from here."""
    hub.token = TOKEN
    cache = herd.root / "cache"
    configure(herd, hub.url, cache)  # no hub_token_env: refused, and the cause says why
    started(herd)
    r = herd.run("pull", "here", Q4, timeout=60)
    assert r.returncode == 1
    assert f"{hub.url} refused {TINY_REPO} (401: gated or private" in r.stderr, r.stderr
    r = herd.run("search", "here", "tiny")
    assert r.returncode == 1 and "refused (401" in r.stderr
    herd.stop_all()
    configure(herd, hub.url, cache, hub_token_env="TEST_HUB_TOKEN")
    herd.extra_env["TEST_HUB_TOKEN"] = TOKEN
    started(herd)
    r = herd.run("search", "here", TINY_REPO, "--json")
    assert r.returncode == 0, r.stderr
    r = herd.run("pull", "here", Q4, timeout=60)
    assert r.returncode == 0, r.stderr
    assert cache_ggufs(cache) == [f"models--tiny--Tiny-GGUF/snapshots/{commit_of(TINY_REPO)}/tiny-Q4_K_M.gguf"]


def test_on_a_terminal_a_live_bar_and_ctrl_c_asks_then_cancels(herd: Herd, hub: HubStandin, tmux: Tmux) -> None:
    hub.rate = 40_000.0
    configure(herd, hub.url, herd.root / "cache")
    started(herd)
    pull = f"{shlex.quote(sys.executable)} -m app --config {shlex.quote(str(herd.config))} pull here {Q4}"
    # The shell outlives the Ctrl+C (a trap, not an ignore, so the command gets the signal) to show the exit status.
    script = f"trap true INT; {pull}; echo EXIT=$?; sleep 60"
    tmux.start(f"sh -c {shlex.quote(script)}", {"XDG_STATE_HOME": str(herd.state_home)})
    bar = tmux.wait(lambda s: "/s" in s and "left" in s and "%" in s, timeout=30)
    assert "█" in bar or "·" in bar
    tmux.keys("C-c")
    tmux.wait(lambda s: f"cancel the download of {Q4} on here? [y/N]" in s)
    tmux.keys("y", "Enter")
    end = tmux.wait(lambda s: "EXIT=" in s, timeout=30)
    assert "EXIT=1" in end and "pull failed: cancelled on request" in end
