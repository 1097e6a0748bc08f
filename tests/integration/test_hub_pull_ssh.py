"""Getting a model onto a machine over ssh (OpenSSH sshd on 127.0.0.1): the router started there gets the hub
settings (the token through a 0600 file, in no process's argv on either side), search from here with the
verdict for that machine, pull through the router's download child there, each failure with its cause, cancel,
and rm confirmed on the far side's disk."""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.argv_watch import argv_watch
from tests.helpers.herd import Herd
from tests.helpers.hub_standin import TINY_REPO, VISION_REPO, HubStandin, closed_hub
from tests.helpers.router import preset_text
from tests.helpers.sshd import SshServer
from tests.helpers.tmpfs import tmpfs

TOKEN = "hf_FarTokenThatMustStaySecret567890123"
Q4 = f"{TINY_REPO}:Q4_K_M"


@pytest.fixture
def far(tmp_path: Path, tiny_models: dict[str, Path], sshd: SshServer, llama_server: str) -> Iterator[Herd]:
    (tmp_path / "remote models.ini").write_text(preset_text(dict(tiny_models)))
    h = Herd(root=tmp_path, config=tmp_path / "config.toml")
    h.sshd = sshd  # type: ignore[attr-defined]
    h.llama_server = llama_server  # type: ignore[attr-defined]
    yield h
    h.stop_all()


def configure(h: Herd, hub_url: str, cache: Path, **extra: object) -> None:
    s: SshServer = h.sshd  # type: ignore[attr-defined]
    keys = {
        "name": "far", "host": s.host, "port": s.port, "user": s.user, "identity_file": str(s.client_key),
        "known_hosts": str(s.known_hosts), "router": f"t-{h.root.name}", "program": h.llama_server,  # type: ignore[attr-defined]
        "preset": str(h.root / "remote models.ini"), "hub": hub_url, "hub_cache": str(cache), **extra,
    }  # fmt: skip
    h.write_config("[[machines]]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in keys.items()))


def router_pid(h: Herd) -> int:
    pids = h.router_pids()
    assert len(pids) == 1, pids
    return pids[0]


def cache_ggufs(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.rglob("*.gguf"))


def test_far_router_gets_the_hub_settings_and_no_argv_holds_the_token(far: Herd, hub: HubStandin) -> None:
    cache = far.root / "far cache"
    configure(far, hub.url, cache, hub_token_env="TEST_HUB_TOKEN")
    far.extra_env["TEST_HUB_TOKEN"] = TOKEN
    b64 = base64.b64encode((TOKEN + "\n").encode()).decode()
    with argv_watch([TOKEN, b64[:24]]) as seen:
        r = far.run("start", "far")
    assert r.returncode == 0, r.stderr
    assert seen == []
    pid = router_pid(far)
    env = dict(item.split("=", 1) for item in Path(f"/proc/{pid}/environ").read_text().split("\0") if "=" in item)
    assert (env["MODEL_ENDPOINT"], env["LLAMA_CACHE"], env["HF_TOKEN"]) == (hub.url, str(cache), TOKEN)


def test_search_pull_load_rm_over_ssh(far: Herd, hub: HubStandin) -> None:
    cache = far.root / "far cache"
    configure(far, hub.url, cache)
    assert far.run("start", "far").returncode == 0
    r = far.run("search", "far", VISION_REPO, "--json")
    assert r.returncode == 0, r.stderr
    assert {q["quant"]: q["verdict"] for q in json.loads(r.stdout)["quants"]} == {"Q4_K_M": "fits", "Q8_0": "fits"}
    r = far.run("pull", "far", Q4, timeout=90)
    assert r.returncode == 0, r.stderr
    assert f"pulled: {Q4} is in the router's list" in r.stdout and "in 1 file(s)" in r.stdout
    assert cache_ggufs(cache) == ["tiny-Q4_K_M.gguf"]
    r = far.run("load", "far", Q4, "--wait", timeout=90)
    assert r.returncode == 0, r.stderr
    r = far.run("rm", "far", Q4, "--yes", timeout=90)
    assert r.returncode == 0, r.stderr
    assert "1 file(s) gone" in r.stdout and cache_ggufs(cache) == []


FAILURES = {
    "missing repo": ("tiny/Nope-GGUF:Q4_K_M", "has no repo tiny/Nope-GGUF (404 from the hub, as far asked it)"),
    "missing quant": (f"{TINY_REPO}:Q5_K_S", "has no Q5_K_S file (it has: tiny-Q4_K_M.gguf, tiny-Q8_0.gguf)"),
    "cut file": (Q4, "broke off on every try (3 attempts: Failed to read connection"),
    "unreachable hub": (Q4, "cannot be reached from far (Could not establish connection)"),
    "full disk": (Q4, "far could not write the download (disk full or not writable)"),
}


@pytest.mark.parametrize("case", list(FAILURES))
def test_each_failure_over_ssh_ends_with_its_cause(case: str, far: Herd, hub: HubStandin, needs_root: None) -> None:
    spec, cause = FAILURES[case]
    cache = far.root / "far cache"
    hub.cut_at = 100_000 if case == "cut file" else None
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(closed_hub()) if case == "unreachable hub" else hub.url
        if case == "full disk":
            stack.enter_context(tmpfs(cache, size_kib=200))
        configure(far, url, cache)
        assert far.run("start", "far").returncode == 0
        r = far.run("pull", "far", spec, timeout=120)
        far.stop_all()
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"far: {spec}: pull failed: " in r.stderr and cause in r.stderr, r.stderr


def test_cancel_over_ssh(far: Herd, hub: HubStandin) -> None:
    cache = far.root / "far cache"
    hub.rate = 50_000.0
    configure(far, hub.url, cache)
    assert far.run("start", "far").returncode == 0
    pull = far.popen("pull", "far", Q4, "--json")
    try:
        assert pull.stdout is not None
        assert json.loads(pull.stdout.readline())["event"] == "progress"
        assert far.run("unload", "far", Q4).returncode == 0
        out, _ = pull.communicate(timeout=60)
    finally:
        if pull.poll() is None:
            pull.kill()
            pull.wait()
    assert pull.returncode == 1
    assert json.loads(out.splitlines()[-1])["cause"].startswith("cancelled on request")
    assert cache_ggufs(cache) == [] and not list(cache.rglob("*.downloadInProgress"))
