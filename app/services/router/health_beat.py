"""One timer for the liveness checks of every followed router: each event stream's silences are filled by a
`/health` asked on a connection kept for it, sent and answered by callbacks, where each router had a task that
slept and woke on a timeout of its own and then awaited a request.

Why: the stream has no keep-alives (the router sends nothing while nothing changes), so a router is only known to
be alive by asking, every HEALTH_EVERY seconds of silence, to see a frozen one within 5 s (router-lessons.md). At
50 idle routers that is 33 checks a second, and they were most of an idle service layer's CPU. The checks alone
against 50 real routers, 2026-12-07, 2 shared cores, 3 runs each: a task per router waking on its own timeout and
asking through KeptGet 0.35-0.74 % of a core, one timer starting a task per check 0.40-0.43 %, this 0.08-0.14 %
(~30 µs a check). The whole service layer at 50 routers went from 0.80 % to 0.41 % (bench/fleet_size.py
--fleet-only, docs/performance.md). A check is a write on a kept socket and a callback when its answer is in; one
timer per event loop sends the round's checks together.

A router is checked at a tick if its stream said nothing since the previous tick and no check of it is still
out, so a router that freezes is asked within HEALTH_EVERY and called "not answering" HEALTH_BOUND after that (4 s),
as before. Answers are hostile input like any other: the head and the body are bounded, anything else is said.
An answer this module does not read (chunked) and a URL that is not a plain `http://host:port` are checked through
the client's own /health instead.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable

from app.services.core.connect_cause import connect_failure
from app.services.core.errors import (
    AnswerTooBig,
    BadAnswer,
    RouterNotAnswering,
    RouterRefused,
    RouterUnreachable,
)
from app.services.router.client import HEALTH_BOUND, RouterClient, health_ok
from app.services.router.http1 import MAX_HEAD, parse_head
from app.services.router.parse import error_message

# Liveness: a router whose stream is silent is asked /health this often (the stream has no keep-alives).
HEALTH_EVERY = 1.5
# Bound: a /health answer's body (`{"status":"ok"}`; an error answer is a sentence).
MAX_HEALTH_BODY = 64 * 1024


async def answers(client: RouterClient) -> tuple[bool, str]:
    """Whether /health answers within HEALTH_BOUND, and why not (the client's own request: for a check beside
    another request, and for the URLs the beat does not speak to)."""
    try:
        await client.health(timeout=HEALTH_BOUND)
    except RouterNotAnswering:
        return False, _no_answer(client)
    except (RouterUnreachable, RouterRefused, BadAnswer) as e:
        return False, f"{client.name}: router not answering (/health: {e})"
    return True, ""


def _no_answer(client: RouterClient) -> str:
    return f"{client.name}: router not answering (/health: no answer within {client.bound(HEALTH_BOUND):g} s)"


class Watch:
    """One event-stream session's router as the beat sees it. The session tells it when the stream said something
    (`heard`); the beat calls `wake` when the session has something to act on: the router stopped answering, it
    answers again, or its first answer (which resets the session's backoff). `alive`, `why` and `take_answered`
    say what."""

    def __init__(self, beat: HealthBeat, client: RouterClient, wake: Callable[[], None]) -> None:
        self._beat = beat
        self.client = client
        self._wake = wake
        self.alive = True
        self.why = ""
        self.pending = False
        """Something for the session to act on (set with the wake, cleared by the session)."""
        self._answered = False  # an answer came since the session last took it
        self._first = True  # the first answer wakes the session (its backoff is reset by it)
        self.quiet = True  # nothing heard from the stream since the last tick
        self._heard_at = 0  # the tick of the last thing heard, and of the check out
        self._asked_at = 0
        self.asking = False
        self.connections = 0
        """Connections opened so far (a test counts them)."""
        self._slow = client.plain_address is None
        self._conn: _Conn | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[None] | None = None
        self._request = b""
        if (address := client.plain_address) is not None:
            host, port = address
            fields = "".join(f"{k}: {v}\r\n" for k, v in client.headers.items())
            self._request = f"GET /health HTTP/1.1\r\nHost: {host}:{port}\r\n{fields}\r\n".encode("latin-1")

    @property
    def what(self) -> str:
        return f"{self.client.name}: GET /health"

    def heard(self) -> None:
        """The stream said something: the router is alive, no check is needed before the next tick."""
        self.quiet = False
        self._heard_at = self._beat.ticks
        self.alive = True

    def take_answered(self) -> bool:
        """Whether /health answered since the last call."""
        answered, self._answered = self._answered, False
        return answered

    def close(self) -> None:
        self._beat.drop(self)
        self._stop_check()
        self._drop_connection()

    # ---- the check ----

    def ask(self) -> None:
        self.asking = True
        self._asked_at = self._beat.ticks
        if self._slow:
            self._task = asyncio.get_running_loop().create_task(self._slow_check())
            return
        self._deadline = asyncio.get_running_loop().call_later(self.client.bound(HEALTH_BOUND), self._timed_out)
        if self._conn is not None and self._conn.open:
            self._conn.send(self._request)
        else:
            self._task = asyncio.get_running_loop().create_task(self._connect_and_send())

    async def _connect_and_send(self) -> None:
        assert self.client.plain_address is not None
        host, port = self.client.plain_address
        self._drop_connection()
        try:
            _, conn = await asyncio.get_running_loop().create_connection(lambda: _Conn(self), host, port)
        except OSError as e:
            self.answered(RouterUnreachable(f"{self.what}: {connect_failure(e)}"))
            return
        self.connections += 1
        self._conn = conn
        conn.send(self._request)

    async def _slow_check(self) -> None:
        alive, why = await answers(self.client)
        self._task, self.asking = None, False
        self._verdict(alive, why)

    def reconnect(self) -> None:
        """The kept connection was closed by the router before it read the request: the check once more, at once, on
        a new one (the deadline still runs)."""
        self._conn = None
        self._task = asyncio.get_running_loop().create_task(self._connect_and_send())

    def _timed_out(self) -> None:
        self._deadline = None
        self._drop_connection()  # an answer that comes late would be read as the next check's
        self._stop_check()
        self._verdict(False, _no_answer(self.client))

    def answered(self, failure: Exception | None) -> None:
        """The check's outcome (None: `{"status":"ok"}`), from the connection or its making."""
        self._stop_check()
        if failure is None:
            self._verdict(True, "")
        else:
            self._drop_connection()
            self._verdict(False, f"{self.client.name}: router not answering (/health: {failure})")

    def read_slowly(self) -> None:
        """An answer this module does not read (chunked): this check and the next through the client's /health."""
        self._drop_connection()
        self._stop_check()
        self._slow = True
        self.ask()

    def _stop_check(self) -> None:
        self.asking = False
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        if self._task is not None and self._task is not asyncio.current_task():
            self._task.cancel()
        self._task = None

    def _drop_connection(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _verdict(self, alive: bool, why: str) -> None:
        if not alive and self._heard_at >= self._asked_at:
            return  # the stream spoke since the check was sent: it is alive, whatever the check met
        if alive:
            self._answered = True
        changed = alive != self.alive or (alive and self._first)
        self._first = self._first and not alive
        self.alive, self.why = alive, why
        if changed and not self.pending:
            self.pending = True
            self._wake()


class _Conn(asyncio.Protocol):
    """One kept connection of a Watch: a request out at a time, its answer gathered as it comes."""

    def __init__(self, watch: Watch) -> None:
        self.watch = watch
        self.transport: asyncio.Transport | None = None
        self.open = False
        self.waiting = False
        self.reused = False  # the request out is not the connection's first: the router may have closed it meanwhile
        self._sent = 0
        self._buf = bytearray()
        self._head: tuple[int, dict[str, str], int] | None = None  # status, fields, where the body starts

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport, self.open = transport, True

    def send(self, request: bytes) -> None:
        assert self.transport is not None
        self.reused = self._sent > 0
        self._sent += 1
        self.waiting, self._buf, self._head = True, bytearray(), None
        self.transport.write(request)

    def close(self) -> None:
        self.open = self.waiting = False
        if self.transport is not None:
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        if not self.waiting:
            self.close()  # an answer nobody asked for: what else is on this connection is unknown
            return
        self._buf += data
        try:
            self._read()
        except (BadAnswer, AnswerTooBig) as e:
            self.waiting = False
            self.watch.answered(e)

    def _read(self) -> None:
        what = self.watch.what
        if self._head is None:
            end = self._buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buf) > MAX_HEAD:
                    raise BadAnswer(f"{what}: an answer whose head has no end within its limit")
                return
            status, fields = parse_head(bytes(self._buf[: end + 4]), what)
            if "chunked" in fields.get("transfer-encoding", "").lower():
                self.waiting = False
                self.watch.read_slowly()
                return
            self._head = (status, fields, end + 4)
        status, fields, start = self._head
        declared = fields.get("content-length", "")
        if declared and not declared.isdigit():
            raise BadAnswer(f"{what}: a malformed Content-Length {declared[:20]!r}")
        body = self._buf[start:]
        if len(body) > MAX_HEALTH_BODY or (declared and int(declared) > MAX_HEALTH_BODY):
            raise AnswerTooBig(f"{what}: an answer over {MAX_HEALTH_BODY // 1024} KiB")
        if not declared or len(body) < int(declared):
            return  # more to come (or, without a length, until the connection closes)
        self._judge(status, bytes(body[: int(declared)]))
        if fields.get("connection", "").lower() == "close" or len(body) > int(declared):
            self.close()  # closing, or more than was declared: nothing more to read on it

    def _judge(self, status: int, body: bytes) -> None:
        self.waiting = False
        if status >= 400:
            failure: Exception = RouterRefused(status, error_message(body.decode("utf-8", errors="replace")), "GET",
                                               "/health")  # fmt: skip
            self.watch.answered(failure)
            return
        try:
            health_ok(body, self.watch.client.name)
        except BadAnswer as e:
            self.watch.answered(e)
            return
        self.watch.answered(None)

    def eof_received(self) -> bool | None:
        return False  # closes the transport; connection_lost says what that means

    def connection_lost(self, exc: Exception | None) -> None:
        self.open = False
        if not self.waiting:
            return
        self.waiting = False
        if self._head is not None and not self._head[1].get("content-length"):
            self._judge(self._head[0], bytes(self._buf[self._head[2] :]))  # an answer that ends at the close
            return
        if self.reused and not self._buf:
            # closed by the router before it read this request (its keep-alive ended): once more, at once
            self.watch.reconnect()
            return
        cause = connect_failure(exc) if exc is not None else "the router closed the connection before answering"
        self.watch.answered(RouterUnreachable(f"{self.watch.what}: {cause}"))


class HealthBeat:
    """The one timer of an event loop's Watches: every HEALTH_EVERY seconds, each router that was quiet since the
    previous tick and has no check out is asked."""

    def __init__(self, every: float = HEALTH_EVERY) -> None:
        self.every = every
        self.ticks = 1
        self._watches: dict[Watch, None] = {}  # in the order they came
        self._timer: asyncio.TimerHandle | None = None

    def watch(self, client: RouterClient, wake: Callable[[], None]) -> Watch:
        w = Watch(self, client, wake)
        self._watches[w] = None
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.every, self._tick)
        return w

    def drop(self, watch: Watch) -> None:
        self._watches.pop(watch, None)
        if not self._watches and self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _tick(self) -> None:
        self._timer = asyncio.get_running_loop().call_later(self.every, self._tick)
        self.ticks += 1
        for w in list(self._watches):
            if w.quiet and not w.asking:
                w.ask()
            w.quiet = True


_beats: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, HealthBeat] = weakref.WeakKeyDictionary()


def beat() -> HealthBeat:
    """The running event loop's beat."""
    loop = asyncio.get_running_loop()
    found = _beats.get(loop)
    if found is None:
        found = _beats[loop] = HealthBeat()
    return found
