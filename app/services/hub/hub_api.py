"""A Hugging Face-compatible hub, asked from where llamaherd runs: repos matching a query, a repo's files with their
sizes, and the first bytes of one file (a Range request, for its GGUF header). Nothing here downloads a model.

The hub is outside data: every answer is bounded in size and time, and a failure is one HubError naming the cause.
Paths follow huggingface.co's API (`GET /api/models?search=`, `GET /api/models/<repo>/tree/<rev>?recursive=true`,
`GET /<repo>/resolve/<rev>/<file>`), which mirrors and proxies copy.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from app.services.core.bounded import MAX_JSON_BYTES, read_capped, read_head
from app.services.core.errors import HerdError

SEARCH_LIMIT = 50
# A hub answers within this or is reported as not answering (a search, a tree, a header's bytes).
HUB_TIMEOUT = 15.0
# Bound: entries kept from a search or a repo's tree (a repo of thousands of files is cut, and says so).
MAX_ENTRIES = 5000
# Bound: pages of a repo's tree followed (huggingface.co answers 1,000 entries a page, the next one in a Link header).
MAX_PAGES = 20
REPO_RE = re.compile(r"[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}")


class HubError(HerdError):
    """The hub could not be asked, or refused, or answered something that is not what was asked for."""


@dataclass(frozen=True)
class RepoHit:
    id: str
    downloads: int | None
    likes: int | None


@dataclass(frozen=True)
class RepoFile:
    path: str
    size: int


def valid_repo(repo: str) -> bool:
    return bool(REPO_RE.fullmatch(repo)) and ".." not in repo


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


class HubClient:
    """One hub (`base`), with the operator's token when the machine names one (sent only to that hub)."""

    def __init__(self, base: str, token: str | None = None, timeout: float = HUB_TIMEOUT) -> None:
        self.base = base.rstrip("/")
        self.timeout = timeout
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        # httpx drops Authorization on a redirect to another host (huggingface.co sends file bytes from a CDN).
        self._http = httpx.AsyncClient(base_url=self.base, headers=headers, timeout=timeout, follow_redirects=True)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> HubClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _get(self, path: str, limit: int, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        status, body, _ = await self._get_page(path, limit, headers)
        return status, body

    async def _get_page(
        self, path: str, limit: int, headers: dict[str, str] | None = None
    ) -> tuple[int, bytes, str | None]:
        """The answer, and the path of its next page when a `Link: <...>; rel="next"` header names one on this hub
        (one elsewhere is not followed: the token goes to this hub only)."""
        where = f"{self.base}{path.split('?', 1)[0]}"
        try:
            async with asyncio.timeout(self.timeout):
                req = self._http.build_request("GET", path, headers=headers)
                resp = await self._http.send(req, stream=True)
                try:
                    if resp.status_code == 404:
                        raise HubError(f"{where}: not on this hub (404)")
                    if resp.status_code in (401, 403):
                        raise HubError(f"{where}: refused ({resp.status_code}: gated or private; a token is needed)")
                    if resp.status_code >= 400:
                        head = (await read_head(resp, 300)).strip()
                        raise HubError(f"{where}: the hub answered {resp.status_code} {head[:200]}")
                    return resp.status_code, await read_capped(resp, limit, where), self._next_path(resp)
                finally:
                    await resp.aclose()
        except TimeoutError:
            raise HubError(f"{where}: the hub did not answer within {self.timeout:g} s") from None
        except httpx.HTTPError as e:
            raise HubError(f"{self.base}: the hub cannot be reached from here ({e or type(e).__name__})") from None

    def _next_path(self, resp: httpx.Response) -> str | None:
        url = resp.links.get("next", {}).get("url")
        if not url:
            return None
        nxt, base = resp.url.join(url), httpx.URL(self.base + "/")  # a relative link is the page's own
        if (nxt.scheme, nxt.host, nxt.port) != (base.scheme, base.host, base.port):
            return None
        path = nxt.raw_path.decode("ascii", "replace")
        prefix = base.raw_path.decode("ascii", "replace").rstrip("/")
        return path[len(prefix) :] if path.startswith(prefix + "/") else None

    async def _json(self, path: str) -> Any:
        return (await self._json_page(path))[0]

    async def _json_page(self, path: str) -> tuple[Any, str | None]:
        _, body, nxt = await self._get_page(path, MAX_JSON_BYTES)
        try:
            return json.loads(body), nxt
        except (ValueError, UnicodeDecodeError):
            raise HubError(f"{self.base}{path.split('?', 1)[0]}: the answer is not JSON") from None

    async def search(self, query: str, limit: int = SEARCH_LIMIT) -> list[RepoHit]:
        """Repos matching `query` that carry GGUF files, most downloaded first."""
        q = quote(query, safe="")
        body = await self._json(f"/api/models?search={q}&filter=gguf&sort=downloads&direction=-1&limit={int(limit)}")
        if not isinstance(body, list):
            raise HubError(f"{self.base}/api/models: expected a list of repos")
        hits = []
        for entry in body[:MAX_ENTRIES]:
            if isinstance(entry, dict) and isinstance(entry.get("id"), str) and valid_repo(entry["id"]):
                hits.append(RepoHit(entry["id"], _int(entry.get("downloads")), _int(entry.get("likes"))))
        return hits

    async def files(self, repo: str, revision: str = "main") -> list[RepoFile]:
        """Every file of the repo (recursively) with its size."""
        if not valid_repo(repo):
            raise HubError(f"not a repo name: {repo!r} (owner/name)")
        path: str | None = f"/api/models/{repo}/tree/{quote(revision, safe='')}?recursive=true"
        body: list[Any] = []
        pages = 0
        while path is not None and pages < MAX_PAGES and len(body) < MAX_ENTRIES:
            page, path = await self._json_page(path)  # a big repo's tree comes a page at a time
            if not isinstance(page, list):
                raise HubError(f"{self.base}/api/models/{repo}/tree: expected a list of files")
            body += page
            pages += 1
        out = []
        for entry in body[:MAX_ENTRIES]:
            if not isinstance(entry, dict) or entry.get("type") != "file" or not isinstance(entry.get("path"), str):
                continue
            lfs = entry.get("lfs")
            size = _int(lfs.get("size")) if isinstance(lfs, dict) else None
            out.append(RepoFile(entry["path"], size if size is not None else (_int(entry.get("size")) or 0)))
        return out

    async def head_bytes(self, repo: str, path: str, n: int, revision: str = "main") -> bytes:
        """The first `n` bytes of a file (a Range request; a hub that ignores Range is cut off at `n`)."""
        if not valid_repo(repo) or ".." in path.split("/"):
            raise HubError(f"not a file of a repo: {repo}/{path}")
        url = f"/{repo}/resolve/{quote(revision, safe='')}/{quote(path)}"
        where = f"{self.base}{url}"
        try:
            async with asyncio.timeout(self.timeout):
                req = self._http.build_request("GET", url, headers={"Range": f"bytes=0-{n - 1}"})
                resp = await self._http.send(req, stream=True)
                try:
                    if resp.status_code >= 400:
                        raise HubError(f"{where}: the hub answered {resp.status_code}")
                    buf = bytearray()
                    async for chunk in resp.aiter_bytes():
                        buf += chunk[: n - len(buf)]
                        if len(buf) >= n:
                            break
                    return bytes(buf)
                finally:
                    await resp.aclose()
        except TimeoutError:
            raise HubError(f"{where}: the hub did not answer within {self.timeout:g} s") from None
        except httpx.HTTPError as e:
            raise HubError(f"{self.base}: the hub cannot be reached from here ({e or type(e).__name__})") from None
