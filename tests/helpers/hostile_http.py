"""A hostile "router" on loopback: answers that never end, lines with no newline, no headers at all, events of
megabytes, 20,000 models, a drip of one byte at a time. Run in a thread of the test; stopped by the test.

Every answer is written by hand on a raw socket, so nothing in an HTTP library smooths the hostility away.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable

OK_HEALTH = b'{"status":"ok"}'

Handler = Callable[[socket.socket], None]


def model(i: int, name: str | None = None) -> dict[str, object]:
    return {
        "id": name or f"model-{i:05d}",
        "object": "model",
        "owned_by": "llamacpp",
        "created": 0,
        "in_cache": False,
        "path": f"/srv/models/model-{i:05d}.gguf",
        "status": {"value": "unloaded", "args": ["llama-server", "--port", "0"], "preset": "ctx-size = 256"},
        "aliases": [f"alias-{i}"],
        "tags": ["hostile"],
    }


def models_body(n: int) -> bytes:
    return json.dumps({"object": "list", "data": [model(i) for i in range(n)]}).encode()


def head(status: str = "200 OK", ctype: str = "application/json", length: int | None = None) -> bytes:
    lines = [f"HTTP/1.1 {status}", f"Content-Type: {ctype}", "Connection: close"]
    lines.append(f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def send_body(s: socket.socket, body: bytes, ctype: str = "application/json") -> None:
    s.sendall(head(ctype=ctype, length=len(body)) + body)


def endless(s: socket.socket, ctype: str, first: bytes, filler: bytes, stop: threading.Event) -> None:
    """Headers, `first`, then `filler` over and over as chunks until the client goes away (or the test ends)."""
    s.sendall(head(ctype=ctype) + chunk(first))
    block = chunk(filler * max(1, 65536 // len(filler)))
    while not stop.is_set():
        s.sendall(block)


def idle_sse(s: socket.socket, stop: threading.Event) -> None:
    s.sendall(head(ctype="text/event-stream"))
    while not stop.is_set():
        time.sleep(0.1)


class HostileRouter:
    """Routes by path; `overrides` replaces the answer for a path (GET /health, /models, /models/sse)."""

    def __init__(self, overrides: dict[str, Callable[[socket.socket, threading.Event], None]], n_models: int = 3):
        self.overrides = overrides
        self.small = models_body(n_models)
        self.stop = threading.Event()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = int(self.sock.getsockname()[1])
        self.paths: list[str] = []
        self._threads: list[threading.Thread] = []
        self._conns: list[socket.socket] = []
        self._acceptor = threading.Thread(target=self._accept, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> HostileRouter:
        self._acceptor.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        # shutdown first: close() alone does not wake a thread blocked in accept(), which then held every test's
        # teardown for the acceptor's whole 5 s join
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self.sock.close()
        for c in list(self._conns):
            with contextlib.suppress(OSError):
                c.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                c.close()
        for t in self._threads:
            t.join(5)
        self._acceptor.join(5)

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self._conns.append(c)
            t = threading.Thread(target=self._serve, args=(c,), daemon=True)
            t.start()  # before it is listed: __exit__ joins what is listed, and a thread not started cannot be joined
            self._threads.append(t)

    def _serve(self, c: socket.socket) -> None:
        with contextlib.suppress(OSError), c:
            req = b""
            while b"\r\n\r\n" not in req:
                got = c.recv(65536)
                if not got:
                    return
                req += got
            path = req.split(b" ", 2)[1].decode()
            self.paths.append(path)
            base = path.split("?")[0]
            if base in self.overrides:
                self.overrides[base](c, self.stop)
            elif base == "/health":
                send_body(c, OK_HEALTH)
            elif base == "/models":
                send_body(c, self.small)
            elif base == "/models/sse":
                idle_sse(c, self.stop)
            else:
                c.sendall(head("404 Not Found", "text/plain", 9) + b"not found")


# ---- the hostile answers ----


def endless_models(c: socket.socket, stop: threading.Event) -> None:
    endless(c, "application/json", b'{"object":"list","data":[', json.dumps(model(1)).encode() + b",", stop)


def endless_sse_line(c: socket.socket, stop: threading.Event) -> None:
    endless(c, "text/event-stream", b"data: {", b"x", stop)


def huge_event(c: socket.socket, stop: threading.Event) -> None:
    # Many data: lines, each fine alone, never closed by a blank line: one event without end.
    endless(c, "text/event-stream", b": hostile\n", b"data: " + b"y" * 8000 + b"\n", stop)


def headerless(c: socket.socket, stop: threading.Event) -> None:
    while not stop.is_set():  # reads the request, says nothing, keeps the connection open
        time.sleep(0.1)


def drip_models(c: socket.socket, stop: threading.Event) -> None:
    body = models_body(3)
    c.sendall(head(length=len(body)))
    for b in body:
        if stop.is_set():
            return
        c.sendall(bytes([b]))
        time.sleep(0.5)


def huge_declared(c: socket.socket, stop: threading.Event) -> None:
    c.sendall(head(length=64 << 30))
    while not stop.is_set():
        c.sendall(b" " * 65536)


def many_models(n: int) -> Callable[[socket.socket, threading.Event], None]:
    body = models_body(n)

    def answer(c: socket.socket, stop: threading.Event) -> None:
        send_body(c, body)

    return answer
