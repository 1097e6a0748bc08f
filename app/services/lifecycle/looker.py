"""Looking at a machine's router without changing anything: where its files are, its record, whether its pid is
still that process, /health, its API key, its log. RouterManager (lifecycle/manager.py) starts and stops it on top
of this.
"""

from __future__ import annotations

import contextlib
import posixpath
from collections.abc import AsyncIterator

from app.config import MachineConfig
from app.services.core.bounded import MAX_LOG_LINE, log_text
from app.services.core.errors import RouterError
from app.services.core.router_types import RouterState
from app.services.hosts.process_start import ProcStart, same_process
from app.services.hosts.transport import Transport
from app.services.lifecycle.api_key import KEY_FILE, parse_key_file
from app.services.lifecycle.look_request import Look, look_argv, parse_look
from app.services.lifecycle.record import RouterRecord, RouterStatus
from app.services.router.client import RouterClient


class RouterLooker:
    def __init__(self, machine: MachineConfig, transport: Transport) -> None:
        self.machine = machine
        self.transport = transport
        self._dir: str | None = None
        self._key: tuple[tuple[int, float], str | None] | None = None  # (pid, start time) -> its key, read once
        # The key file's key as the last look over ssh found it: (key or None when there is none), or None when
        # that look could not tell.
        self._looked_key: tuple[str | None] | None = None
        self._seen: tuple[Look, bool] | None = None  # over ssh, the last look's answer and whether it found it alive

    # ---- paths on the serving machine ----

    async def state_dir(self) -> str:
        if self._dir is None:
            base = await self.transport.state_dir()
            self._dir = posixpath.join(base, "routers", self.machine.router)
        return self._dir

    async def record_path(self) -> str:
        return posixpath.join(await self.state_dir(), "record.json")

    async def log_path(self) -> str:
        return posixpath.join(await self.state_dir(), "router.log")

    async def lock_path(self) -> str:
        return posixpath.join(await self.state_dir(), "start.lock")

    async def key_path(self) -> str:
        return posixpath.join(await self.state_dir(), KEY_FILE)

    async def preset_path(self) -> str:
        if self.machine.preset:
            return await self.transport.expand(self.machine.preset)
        return posixpath.join(await self.state_dir(), "models.ini")

    # ---- the record ----

    async def read_record(self) -> RouterRecord | None:
        try:
            data = await self.transport.read_file(await self.record_path())
        except FileNotFoundError:
            return None
        return RouterRecord.from_json(data)

    async def write_record(self, rec: RouterRecord) -> None:
        await self.transport.write_file_atomic(await self.record_path(), rec.to_json(), mode=0o600)

    async def clear_record(self) -> None:
        await self.transport.remove(await self.record_path())

    # ---- looking ----

    async def is_same_process(self, rec: RouterRecord) -> bool:
        """pid alive and the same process (a reused pid is not the router)."""
        return same_process(await self.transport.live_start(rec.pid), rec.started)

    def ask_early(self) -> None:
        """Over ssh: the first look (record, process, key) rides along with the connection's agent start."""
        self.transport.ask_early(self._look_argv())

    def _look_argv(self) -> list[str]:
        return look_argv(posixpath.join("llamaherd", "routers", self.machine.router), KEY_FILE)

    async def look(self, found: Look | None = None) -> tuple[RouterRecord | None, bool]:
        """The record, and whether its pid is still that process: over ssh in one request (lifecycle/look_request.py),
        or from the answer `found` that came with another request."""
        rec, _, alive = await self._look(found)
        return rec, alive

    async def _look(self, found: Look | None = None) -> tuple[RouterRecord | None, ProcStart | None, bool]:
        """look's record and answer, with the start of the live process the record's pid is now (None: gone)."""
        self._looked_key = self._seen = None
        if not self.transport.is_local:
            if found is None:
                res = await self.transport.run(self._look_argv())
                found = parse_look(res.returncode, res.stdout)
            if found is not None and found.directory == await self.state_dir():
                if found.key_file is not None:
                    self._looked_key = (parse_key_file(found.key_file),)
                rec = RouterRecord.from_json(found.record) if found.record is not None else None
                if rec is None:
                    self._seen = (found, False)
                    return None, None, False  # none, or damaged (a damaged record is a stale record)
                if rec.pid == found.pid:
                    alive = same_process(found.start, rec.started)
                    if alive and rec.requires_key and self._looked_key is not None:  # what client_key reads next
                        self._key = ((rec.pid, rec.start_time), self._looked_key[0] or self.machine.api_key())
                    self._seen = (found, alive)
                    return rec, found.start, alive
        rec = await self.read_record()
        if rec is None:
            return None, None, False
        live = await self.transport.live_start(rec.pid)
        return rec, live, same_process(live, rec.started)

    async def inspect(self) -> RouterStatus:
        """Look without changing anything: a running router, one stopped on request, one that exited, or none."""
        rec, alive = await self.look()
        return await self._status_of(rec, alive)

    async def _status_of(self, rec: RouterRecord | None, alive: bool) -> RouterStatus:
        if rec is None:
            return RouterStatus(RouterState.ABSENT, reason="no router has been started here")
        if alive:
            starting = rec.state is RouterState.STARTING
            return RouterStatus(RouterState.STARTING if starting else RouterState.RUNNING, rec)
        if rec.state is RouterState.STOPPING:
            return RouterStatus(RouterState.STOPPED, rec, reason="stopped on request")
        tail = tuple(await self.log_tail(12, rec.log))
        why = f"router (pid {rec.pid}) exited without being asked"
        return RouterStatus(RouterState.EXITED, rec, reason=why, log_tail=tail)

    async def _healthy(self, port: int, timeout: float = 3.0) -> bool:
        try:
            async with self.client(port, timeout=timeout) as c:  # /health needs no key
                return await c.health()
        except RouterError:
            return False

    @contextlib.asynccontextmanager
    async def client(self, port: int, timeout: float = 10.0, api_key: str | None = None) -> AsyncIterator[RouterClient]:
        local = await self.transport.forward_port(port)
        rtt = self.transport.round_trip
        c = RouterClient(f"http://127.0.0.1:{local}", api_key=api_key, timeout=timeout, round_trip=rtt)
        try:
            yield c
        finally:
            await c.aclose()

    # ---- the API key ----

    async def read_key(self) -> str | None:
        """The key in the key file on the serving machine, or None when there is none."""
        try:
            data = await self.transport.read_file(await self.key_path())
        except FileNotFoundError:
            return None
        return parse_key_file(data)

    async def client_key(self, rec: RouterRecord | None) -> str | None:
        """The key a client of this router sends: the key file's for a router started with one (read once per
        router process), else the machine's api_key_env (an open router ignores it)."""
        if rec is None or not rec.requires_key:
            return self.machine.api_key()
        ident = (rec.pid, rec.start_time)
        if self._key is None or self._key[0] != ident:
            self._key = (ident, await self.read_key() or self.machine.api_key())
        return self._key[1]

    # ---- logs ----

    async def log_tail(self, n: int = 20, path: str | None = None) -> list[str]:
        log = path or await self.log_path()
        # cut keeps the answer bounded whatever the log holds (one line of gigabytes once came back whole).
        lines = await self.transport.last_lines(log, n, MAX_LOG_LINE + 1)
        raw = [ln.removesuffix(b"\r") for ln in lines or ()]
        return [log_text(ln[:MAX_LOG_LINE], len(ln) > MAX_LOG_LINE) for ln in raw]

    async def _new_log(self, log: str, offset: int, n: int = 15) -> list[str]:
        """The last lines this start wrote (the log is appended to, so older runs are skipped)."""
        try:
            data = await self.transport.read_file(log)
        except FileNotFoundError:
            return []
        lines = data[offset:].decode(errors="replace").splitlines()
        return lines[-n:]
