"""A repo's tree read a page at a time, as huggingface.co answers a big repo (1,000 entries a page, the next page
in a `Link: <...>; rel="next"` header): every page is followed, and a next page on another host is not (the token
goes to the machine's hub only)."""

from __future__ import annotations

import httpx

from app.services.hub.hub_api import HubClient
from tests.helpers.hub_standin import VISION_REPO, HubStandin


async def test_every_page_of_a_tree_is_read(hub: HubStandin) -> None:
    async with HubClient(hub.url) as c:
        whole = sorted(f.path for f in await c.files(VISION_REPO))
    assert len(whole) == 5  # two shards, a quant, a projector, a README
    hub.page_size = 2
    hub.requests.clear()
    async with HubClient(hub.url) as c:
        paged = sorted(f.path for f in await c.files(VISION_REPO))
    assert paged == whole
    assert len([r for r in hub.requests if "/tree/" in r]) == 3


def test_a_next_page_is_followed_on_the_same_hub_only() -> None:
    c = HubClient("http://127.0.0.1:8080/mirror")

    def nxt(link: str) -> str | None:
        page = httpx.Request("GET", "http://127.0.0.1:8080/mirror/api/models/a/b/tree/main?recursive=true")
        return c._next_path(httpx.Response(200, headers={"Link": link}, request=page))

    assert nxt('<http://127.0.0.1:8080/mirror/api/models/a/b/tree/main?cursor=2>; rel="next"') == (
        "/api/models/a/b/tree/main?cursor=2"
    )
    assert nxt('<http://elsewhere.example/api/models/a/b/tree/main?cursor=2>; rel="next"') is None
    assert nxt('<http://127.0.0.1:9999/mirror/api/x>; rel="next"') is None
    assert nxt('<http://127.0.0.1:8080/mirror/api/x>; rel="prev"') is None
    assert nxt('</mirror/api/models/a/b/tree/main?cursor=4>; rel="next"') == "/api/models/a/b/tree/main?cursor=4"
    assert nxt('</elsewhere/api/x>; rel="next"') is None
