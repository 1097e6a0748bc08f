"""A Hugging Face-compatible hub on loopback, serving repos from a folder of tiny GGUF files, for the pull tests.

It answers what llama-server's download child asks (reference §2.7, confirmed by logging it here):
`GET /api/models/<repo>/refs`, `GET /api/models/<repo>/tree/<commit>?recursive=true`, then HEAD and GET (with
`Range` to resume) on `/<repo>/resolve/<commit>/<file>`; and what the hub screen asks: `GET /api/models?search=Q`
(a list of `{"id", "modelId", "downloads", "likes", "tags"}` like huggingface.co) and
`GET /api/models/<repo>/tree/main`.

The folder holds `<owner>/<name>/<file>`. Switches, set on the object while it runs: `missing` (repos answered
404 although present), `cut_at` (every GET of a file stops after that many bytes and closes the connection),
`rate` (bytes per second for file bodies), `token` (a gated hub: 401 without that bearer token), `page_size` (a
tree a page at a time, the next page in a `Link` header), `requests` (every request line seen). `closed_hub()`
holds an address
that refuses connections: an unreachable hub.

Threaded (one thread per connection); stopped by the fixture that started it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import socket
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from app.tinymodels import TinySpec, write_tiny_model

CHUNK = 16384


def commit_of(repo: str) -> str:
    """A stable 40-hex commit per repo, so a resumed download finds the same snapshot."""
    return hashlib.sha1(repo.encode()).hexdigest()


def write_repo(root: Path, repo: str, files: dict[str, TinySpec]) -> Path:
    """Write a repo of tiny models (file name -> spec) under `root`; returns its folder."""
    folder = root / repo
    for name, spec in files.items():
        write_tiny_model(folder / name, spec)
    return folder


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that went mid-request (a cancelled pull, a router stopped) is no fault of the hub's: not a
        # traceback in the test output (socketserver prints one for every exception of a handler).
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class HubStandin:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.missing: set[str] = set()
        self.cut_at: int | None = None
        self.rate: float | None = None
        self.token: str | None = None  # when set, every request without `Authorization: Bearer <token>` gets 401
        # when set, a tree is answered this many entries a page, the next page named in a Link header (rel="next")
        # as huggingface.co does (1,000 a page there)
        self.page_size: int | None = None
        self.requests: list[str] = []
        self._sha: dict[Path, str] = {}
        self._lock = threading.Lock()
        self._server = _QuietServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05})

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> HubStandin:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    # what the handler reads

    def repo_folder(self, repo: str) -> Path | None:
        if repo in self.missing or not re.fullmatch(r"[\w.-]+/[\w.-]+", repo):
            return None
        folder = self.root / repo
        return folder if folder.is_dir() else None

    def repos(self) -> list[str]:
        return sorted(
            f"{o.name}/{r.name}" for o in self.root.iterdir() if o.is_dir() for r in o.iterdir() if r.is_dir()
        )

    def sha256(self, path: Path) -> str:
        with self._lock:
            if path not in self._sha:
                self._sha[path] = hashlib.sha256(path.read_bytes()).hexdigest()
            return self._sha[path]

    def note(self, line: str) -> None:
        with self._lock:
            self.requests.append(line)


@contextlib.contextmanager
def closed_hub() -> Iterator[str]:
    """A loopback address bound but never listening: connecting is refused for as long as this is held."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    try:
        yield f"http://127.0.0.1:{s.getsockname()[1]}"
    finally:
        s.close()


def _handler_for(hub: HubStandin) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_HEAD(self) -> None:
            self._route(body=False)

        def do_GET(self) -> None:
            self._route(body=True)

        def _route(self, body: bool) -> None:
            rng = self.headers.get("Range")
            hub.note(f"{self.command} {self.path}" + (f" Range: {rng}" if rng else ""))
            if hub.token is not None and self.headers.get("Authorization") != f"Bearer {hub.token}":
                return self._json(401, {"error": "Invalid credentials in Authorization header"})
            parts = urlsplit(self.path)
            path = unquote(parts.path)
            query = parse_qs(parts.query)
            if path == "/api/models":
                return self._search(query)
            m = re.fullmatch(r"/api/models/([^/]+/[^/]+)/refs", path)
            if m:
                return self._refs(m[1])
            m = re.fullmatch(r"/api/models/([^/]+/[^/]+)/tree/([^/]+)(?:/.*)?", path)
            if m:
                return self._tree(m[1], parts.path, query)
            m = re.fullmatch(r"/api/models/([^/]+/[^/]+)", path)
            if m:
                return self._info(m[1])
            m = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
            if m:
                return self._resolve(m[1], m[3], body)
            self._json(404, {"error": "Not found"})

        def _json(self, status: int, obj: object, link: str | None = None) -> None:
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if link:
                self.send_header("Link", link)
            if status == 404:
                self.send_header("X-Error-Code", "RepoNotFound")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def _not_found(self) -> None:
            self._json(404, {"error": "Repository not found"})

        def _search(self, query: dict[str, list[str]]) -> None:
            words = (query.get("search") or [""])[0].lower()
            limit = int((query.get("limit") or ["50"])[0])
            found = [r for r in hub.repos() if words in r.lower() and r not in hub.missing][:limit]
            self._json(
                200,
                [
                    {"_id": commit_of(r)[:24], "id": r, "modelId": r, "likes": 0, "downloads": 0, "tags": ["gguf"],
                     "library_name": "gguf", "private": False}
                    for r in found
                ],
            )  # fmt: skip

        def _refs(self, repo: str) -> None:
            if hub.repo_folder(repo) is None:
                return self._not_found()
            main = {"name": "main", "ref": "refs/heads/main", "targetCommit": commit_of(repo)}
            self._json(200, {"branches": [main], "converts": [], "tags": []})

        def _tree(self, repo: str, path: str, query: dict[str, list[str]]) -> None:
            folder = hub.repo_folder(repo)
            if folder is None:
                return self._not_found()
            entries = []
            for p in sorted(folder.rglob("*")):
                if p.is_file() and not p.name.endswith(".tmp"):
                    size = p.stat().st_size
                    rel = str(p.relative_to(folder))
                    git_oid = hashlib.sha1(rel.encode()).hexdigest()
                    lfs = {"oid": hub.sha256(p), "size": size, "pointerSize": 134}
                    entries.append({"type": "file", "oid": git_oid, "size": size, "path": rel, "lfs": lfs})
            if hub.page_size is None:
                return self._json(200, entries)
            start = int((query.get("cursor") or ["0"])[0])
            end = start + hub.page_size
            link = f'<{hub.url}{path}?recursive=true&cursor={end}>; rel="next"' if end < len(entries) else None
            self._json(200, entries[start:end], link)

        def _info(self, repo: str) -> None:
            folder = hub.repo_folder(repo)
            if folder is None:
                return self._not_found()
            siblings = [{"rfilename": str(p.relative_to(folder))} for p in sorted(folder.rglob("*.gguf"))]
            self._json(200, {"id": repo, "modelId": repo, "sha": commit_of(repo), "siblings": siblings})

        def _resolve(self, repo: str, name: str, body: bool) -> None:
            folder = hub.repo_folder(repo)
            path = (folder / name) if folder is not None else None
            if folder is None or path is None or ".." in name.split("/") or not path.is_file():
                return self._json(404, {"error": "Entry not found"})
            size = path.stat().st_size
            start = 0
            m = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range") or "")
            if m:
                start = min(int(m[1]), size)
            self.send_response(206 if m else 200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(size - start))
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("ETag", f'"{hub.sha256(path)}"')
            self.send_header("X-Repo-Commit", commit_of(repo))
            self.send_header("X-Linked-Size", str(size))
            self.send_header("X-Linked-Etag", f'"{hub.sha256(path)}"')
            if m:
                self.send_header("Content-Range", f"bytes {start}-{size - 1}/{size}")
            self.end_headers()
            if body:
                self._send_file(path, start, size)

        def _send_file(self, path: Path, start: int, size: int) -> None:
            end = size if hub.cut_at is None else min(size, max(start, hub.cut_at))
            began = time.monotonic()
            sent = 0
            with open(path, "rb") as f:
                f.seek(start)
                while start + sent < end:
                    block = f.read(min(CHUNK, end - start - sent))
                    if not block:
                        break
                    try:
                        self.wfile.write(block)
                    except OSError:
                        return
                    sent += len(block)
                    if hub.rate:
                        # paced against the start so the average rate holds however the writes batch
                        ahead = sent / hub.rate - (time.monotonic() - began)
                        if ahead > 0:
                            time.sleep(ahead)
            if end < size:
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)

    return Handler


TINY_REPO = "tiny/Tiny-GGUF"
# For listings only: shards and a projector (a tiny llama file named mmproj is no projector a child could load).
VISION_REPO = "tiny/Vision-GGUF"


def write_tiny_hub(root: Path) -> Path:
    """The stand-in's folder: TINY_REPO (two quants that load) and VISION_REPO (two shards, a projector)."""
    write_repo(
        root, TINY_REPO, {"tiny-Q4_K_M.gguf": TinySpec("tiny-q4"), "tiny-Q8_0.gguf": TinySpec("tiny-q8", seed=1)}
    )
    write_repo(
        root,
        VISION_REPO,
        {
            "vis-Q4_K_M-00001-of-00002.gguf": TinySpec("vis", seed=2),
            "vis-Q4_K_M-00002-of-00002.gguf": TinySpec("vis", seed=3),
            "vis-Q8_0.gguf": TinySpec("vis8", seed=4),
            "mmproj-vis-F16.gguf": TinySpec("proj", seed=5),
        },
    )
    (root / VISION_REPO / "README.md").write_text("# not a model\n")
    return root


@contextlib.contextmanager
def running_hub(root: Path) -> Iterator[HubStandin]:
    """A stand-in serving `root`, stopped (its threads joined) when the block ends."""
    hub = HubStandin(root).start()
    try:
        yield hub
    finally:
        hub.stop()


def main(argv: list[str]) -> None:
    """`python -m tests.helpers.hub_standin ROOT [RATE]`: serve ROOT (at RATE bytes/s) until stdin closes; prints
    the URL first. For benches, which keep the serving side out of the process they measure."""
    import sys

    hub = HubStandin(Path(argv[0]))
    hub.rate = float(argv[1]) if len(argv) > 1 else None
    hub.start()
    print(hub.url, flush=True)
    try:
        sys.stdin.read()
    finally:
        hub.stop()


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
