"""The hub stand-in itself: what the router's download child and the hub screen ask, and its switches."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from tests.helpers.hub_standin import (
    TINY_REPO,
    VISION_REPO,
    HubStandin,
    closed_hub,
    commit_of,
)


def test_refs_tree_head_and_ranged_get(hub: HubStandin, hub_root: Path) -> None:
    refs = httpx.get(f"{hub.url}/api/models/{TINY_REPO}/refs").json()
    commit = refs["branches"][0]["targetCommit"]
    assert commit == commit_of(TINY_REPO) and len(commit) == 40
    tree = httpx.get(f"{hub.url}/api/models/{TINY_REPO}/tree/{commit}?recursive=true").json()
    by_path = {e["path"]: e for e in tree}
    q4 = hub_root / TINY_REPO / "tiny-Q4_K_M.gguf"
    assert by_path["tiny-Q4_K_M.gguf"]["size"] == q4.stat().st_size
    assert by_path["tiny-Q4_K_M.gguf"]["lfs"]["size"] == q4.stat().st_size
    url = f"{hub.url}/{TINY_REPO}/resolve/{commit}/tiny-Q4_K_M.gguf"
    head = httpx.head(url)
    assert head.status_code == 200 and int(head.headers["content-length"]) == q4.stat().st_size
    assert head.headers["x-repo-commit"] == commit
    whole = httpx.get(url).content
    assert whole == q4.read_bytes()
    part = httpx.get(url, headers={"Range": "bytes=1000-"})
    assert part.status_code == 206 and part.content == whole[1000:]
    assert part.headers["content-range"] == f"bytes 1000-{len(whole) - 1}/{len(whole)}"
    assert f"GET /{TINY_REPO}/resolve/{commit}/tiny-Q4_K_M.gguf Range: bytes=1000-" in hub.requests


def test_search_like_the_hub(hub: HubStandin) -> None:
    found = httpx.get(f"{hub.url}/api/models", params={"search": "gguf", "limit": 10}).json()
    assert [r["id"] for r in found] == [TINY_REPO, VISION_REPO]
    assert httpx.get(f"{hub.url}/api/models", params={"search": "vision"}).json()[0]["id"] == VISION_REPO
    assert httpx.get(f"{hub.url}/api/models", params={"search": "nothing-like-it"}).json() == []


def test_missing_repo_and_file_are_404(hub: HubStandin) -> None:
    assert httpx.get(f"{hub.url}/api/models/tiny/Nope-GGUF/refs").status_code == 404
    hub.missing.add(TINY_REPO)
    assert httpx.get(f"{hub.url}/api/models/{TINY_REPO}/refs").status_code == 404
    assert httpx.get(f"{hub.url}/api/models", params={"search": "tiny"}).json()[0]["id"] == VISION_REPO
    hub.missing.clear()
    assert httpx.get(f"{hub.url}/{TINY_REPO}/resolve/main/nope.gguf").status_code == 404
    assert httpx.get(f"{hub.url}/{TINY_REPO}/resolve/main/../../etc/passwd").status_code == 404


def test_cut_stops_every_get_at_the_same_byte(hub: HubStandin) -> None:
    hub.cut_at = 5000
    url = f"{hub.url}/{TINY_REPO}/resolve/main/tiny-Q8_0.gguf"
    for headers in ({}, {"Range": "bytes=5000-"}):
        with pytest.raises(httpx.RemoteProtocolError):
            httpx.get(url, headers=headers)
    with httpx.stream("GET", url) as resp:
        got = b""
        with pytest.raises(httpx.RemoteProtocolError):
            for chunk in resp.iter_bytes():
                got += chunk
    assert len(got) == 5000


@pytest.mark.timing
def test_rate_paces_the_body(hub: HubStandin) -> None:
    hub.rate = 400_000.0
    url = f"{hub.url}/{TINY_REPO}/resolve/main/tiny-Q8_0.gguf"
    t0 = time.monotonic()
    n = len(httpx.get(url, timeout=30).content)
    took = time.monotonic() - t0
    assert n / took < 400_000 * 1.1, f"{n} bytes in {took:.2f} s"
    assert took < n / 400_000 + 2


def test_closed_hub_refuses() -> None:
    with closed_hub() as url, pytest.raises(httpx.ConnectError):
        httpx.get(url + "/api/models", timeout=2)
