"""One router per machine: start, adopt, stop, and the record that lets the next run find it.

The rules come from shared/design/router-lessons.md: the router is detached with its output appended to a 0600
log; a record (pid, process start time, port, program, preset, log) on the serving machine lets any later run
adopt it; adoption needs pid alive *and* the same start (hosts/process_start.py: boot id and start since boot, which a
wall-clock step leaves alone) *and* /health; stop marks the record "stopping" first and leaves it there, so
watchers say "stopped on request" rather than "crashed". Every router started here requires an API key, kept
beside the record (lifecycle/api_key.py); state directories are 0700.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import posixpath
import signal
import time
from collections.abc import AsyncIterator
from dataclasses import replace

from app.config import MachineConfig
from app.services.core.errors import LifecycleError, WriteFailed
from app.services.core.router_types import RouterState
from app.services.hosts.transport import Transport, pick_free_port
from app.services.lifecycle.api_key import KEY_ENV, key_from_env, new_key, parse_key_file
from app.services.lifecycle.hub_env import TOKEN_ENV, TOKEN_FILE, HubEnv, hub_env, token_stdin, token_write_argv
from app.services.lifecycle.llama_server_binary import find_llama_server, program_not_found
from app.services.lifecycle.look_request import (
    CONFIRMED,
    NOT_THAT_PROCESS,
    NOT_WRITTEN,
    THEN_LOOK,
    Look,
    confirm_running_request,
    parse_locked_look,
    write_then_signal_request,
)
from app.services.lifecycle.looker import RouterLooker
from app.services.lifecycle.new_preset import new_preset_text
from app.services.lifecycle.record import RouterRecord as RouterRecord
from app.services.lifecycle.record import RouterStatus as RouterStatus
from app.services.lifecycle.start_prepare import (
    DONE,
    KEY_NOT_WRITTEN,
    THEN_PREPARE,
    Prepared,
    prepare_request,
    split_prepared,
)

HEALTH_EVERY = 0.25
HEALTH_TIMEOUT = 30.0
# A starting router refuses connections or answers /health at once; the probe is asked again every HEALTH_EVERY.
STARTUP_PROBE = 1.0
STOP_TIMEOUT = 15.0
LOCK_STALE_AFTER = 60.0
# State directories are 0700 (they hold the key, the record and the log), including ones an older llamaherd made
# 0755; the log 0600. Positional parameters: router dir, llamaherd dir, routers dir, log.
_PRIVATE_DIRS = 'umask 077 && mkdir -p -- "$1" && chmod 700 -- "$2" "$3" "$1" && { [ ! -e "$4" ] || chmod 600 "$4"; }'
_LOCK_TAKEN = 3

# One asyncio lock per (transport, router) in this process; the mkdir lock on the machine covers other processes.
_local_locks: dict[tuple[int, str], asyncio.Lock] = {}


class RouterManager(RouterLooker):
    def __init__(self, machine: MachineConfig, transport: Transport) -> None:
        super().__init__(machine, transport)
        self._lock_released = False  # the start lock was released by the request that wrote "running"
        # Over ssh, a fresh start's second request sent with its first (lifecycle/start_prepare.py): the look it was
        # planned from and the key it writes, and then what it did.
        self._plan: tuple[Look, str] | None = None
        self._prepared: Prepared | None = None

    async def adopt(self, found: Look | None = None) -> RouterRecord | None:
        """The router from the record if it is alive, the same process, and answers /health; else None.

        A record of a process that is gone (and was not stopped on request) is stale and is cleared.
        """
        rec, alive, anchored = await self._look_recorded(found)
        if rec is None:
            return None
        if alive:
            if rec.state is RouterState.STOPPING:
                return None  # on its way out
            if await self._healthy(rec.port):
                if anchored:  # later looks then know it by its start again
                    await self.write_record(rec)
                return rec
            # Alive but silent (stopped with SIGSTOP, wedged): starting a second one beside it would take its
            # record and leave it running unseen.
            raise LifecycleError(
                f"the router on {self.machine.name} (pid {rec.pid}) is running but not answering /health; "
                f"stop it first (`llamaherd stop {self.machine.name}`)"
            )
        if rec.state is not RouterState.STOPPING:
            await self.clear_record()
        return None

    async def _look_recorded(self, found: Look | None = None) -> tuple[RouterRecord | None, bool, bool]:
        """look, and then, where the recorded pid is alive but its start is not the record's (a wall-clock step
        under a record that has only the epoch start, or anything else that fooled the start), whether it is
        evidently the recorded router all the same: its command line is the record's argv, which holds the
        router's random port and its preset (a pid reused by another program does not have it). That costs a
        request only then, never in a normal stop. Returns (record, alive, re-anchored): a router recognised so
        comes back with the record's start taken from the live process, so that waiting for it to go works."""
        rec, live, alive = await self._look(found)
        if rec is None or alive or live is None or not rec.argv:
            return rec, alive, False
        if await self.transport.process_argv(rec.pid) != rec.argv:
            return rec, False, False
        return rec.with_start(live), True, True

    async def _running_and_healthy(self) -> RouterRecord | None:
        rec, alive = await self.look()
        if rec is None or rec.state is not RouterState.RUNNING or not alive:
            return None
        return rec if await self._healthy(rec.port) else None

    # ---- the API key ----

    async def _key_for_start(self) -> str:
        """The machine's api_key_env when it sets one, else the key made on the first start (made now if none);
        written to the key file (0600) either way, which is what the router reads."""
        looked, self._looked_key = self._looked_key, None  # read by the look just before (inside the lock)
        key = self._key_from(looked)
        if key is None:
            key = await self.read_key() or new_key()
        await self.transport.write_file_atomic(await self.key_path(), (key + "\n").encode(), mode=0o600)
        return key

    def _key_from(self, looked: tuple[str | None] | None) -> str | None:
        """The key a start writes, given the key file's key as a look found it; None when it must be read first."""
        m = self.machine
        if m.api_key_env:
            return key_from_env(m.name, m.api_key_env, m.api_key())
        return None if looked is None else looked[0] or new_key()

    def _start_plan(self) -> tuple[Look, str] | None:
        """Over ssh, when the look just before found no live router and could read the key file: that look and
        the key the start would write, so that the request taking the lock can also do the start's next steps."""
        seen, self._seen = self._seen, None
        # A live pid that is not the recorded start is looked at inside the lock first (adopt: it may be the
        # router all the same); the plan would remove its record.
        if seen is None or seen[1] or seen[0].key_file is None or seen[0].start is not None:
            return None
        try:
            key = self._key_from((parse_key_file(seen[0].key_file),))
        except LifecycleError:
            return None  # said by the usual way, inside the lock
        return (seen[0], key) if key is not None else None

    # ---- starting ----

    async def start(self) -> tuple[RouterRecord, bool]:
        """Start the machine's router, or adopt the one running. Returns (record, started_by_us)."""
        key = (id(self.transport), await self.state_dir())
        lock = _local_locks.setdefault(key, asyncio.Lock())
        # A router that runs and answers is adopted without the lock (nothing is changed): three round trips
        # instead of six over ssh. Anything else is decided inside the lock.
        rec = await self._running_and_healthy()
        if rec is not None:
            return rec, False
        async with lock:
            self._plan = self._start_plan()
            async with self._machine_lock() as found:
                prepared, self._prepared, self._plan = self._prepared, None, None
                if prepared is not None and prepared.status == KEY_NOT_WRITTEN:
                    raise LifecycleError(f"cannot write the API key file on {self.machine.name}")
                if prepared is not None and prepared.status == DONE:
                    return await self._start_new(prepared), True  # the look inside the lock found it unchanged
                # Asked again inside the lock: two starts at once would otherwise both find none and start two.
                rec = await self.adopt(found)
                if rec is not None:
                    return rec, False
                return await self._start_new(), True

    async def _start_new(self, prepared: Prepared | None = None) -> RouterRecord:
        t = self.transport
        program = await self.program()
        preset = await self.preset_path()
        log = await self.log_path()
        if prepared is not None:  # done with the lock's request: the old record removed, the key written
            self._looked_key = None
            port = self.machine.router_port or pick_free_port(prepared.used_ports)
            before = prepared.log
            if prepared.preset is None:
                await self._new_preset(preset)
        else:
            # Independent steps asked together: over ssh the agent answers them in parallel, one round trip.
            # Starting a new router is what clears the old record.
            port, _, before, _, _ = await asyncio.gather(
                self._port(), self._key_for_start(), t.stat(log), self._default_preset(preset), self.clear_record()
            )
        argv = (
            program, "--host", "127.0.0.1", "--port", str(port),
            "--models-preset", preset, "--models-max", str(self.machine.models_max),
            # Per-model activity (tokens/s, requests in flight) is read from /metrics; the children inherit it.
            "--metrics",
            *self.machine.extra_args,
        )  # fmt: skip
        offset = before.size if before else 0  # what this start writes comes after this point of the log
        hub, env_files = await self._hub_env()
        env_files[KEY_ENV] = await self.key_path()
        pid = await t.spawn_detached(list(argv), log_path=log, env=hub.env, env_files=env_files)
        if not t.is_local:  # the channel for the first /health opened now, before its client is even made
            t.warm_forward(await t.forward_port(port))
        started = await t.process_start(pid)
        if started is None:
            raise LifecycleError(f"llama-server exited at once ({program})", await self._new_log(log, offset))
        rec = RouterRecord(
            pid=pid, start_time=started.epoch, port=port, program=program, preset=preset, log=log,
            state=RouterState.STARTING, started_at=time.time(), argv=argv, models_max=self.machine.models_max,
            requires_key=True, boot_id=started.boot_id, since_boot=started.since_boot, log_offset=offset,
            hub=hub.applied,
        )  # fmt: skip
        # The record is written while the process is first looked at (one round trip over ssh, not two), and the
        # first /health is asked meanwhile (its answer is taken only once the process was seen alive). The two
        # requests are sent first: making the probe's HTTP client takes the loop for a while.
        looks = asyncio.gather(self.write_record(rec), self.is_same_process(rec))
        first = asyncio.ensure_future(self._healthy(port, STARTUP_PROBE))
        probe: asyncio.Future[bool] | None = first
        try:
            _, alive = await looks
        except BaseException:
            first.cancel()
            raise
        deadline = time.monotonic() + HEALTH_TIMEOUT
        while time.monotonic() < deadline:
            # Watch the process while waiting: a taken port or an unknown flag exits within a second. Looked at
            # before /health too, whose probe a silent squatter on a fixed router_port holds for its whole bound.
            if not alive:
                if probe is not None:
                    probe.cancel()
                await self.clear_record()
                raise LifecycleError(
                    f"llama-server exited during start-up on {self.machine.name}", await self._new_log(log, offset)
                )
            # Healthy *and* still our process: on a fixed router_port, another server already there also answers.
            healthy = await (probe if probe is not None else self._healthy(port, STARTUP_PROBE))
            probe = None
            confirmed = await self._confirm_running(rec) if healthy else None
            if confirmed is not None:  # over ssh: checked, written and the lock released in one request
                if confirmed:
                    return replace(rec, state=RouterState.RUNNING)
                alive = False
                continue
            if healthy and await self.is_same_process(rec):
                rec = replace(rec, state=RouterState.RUNNING)
                await self.write_record(rec)
                return rec
            await asyncio.sleep(HEALTH_EVERY)
            alive = await self.is_same_process(rec)
        await t.kill(pid, signal.SIGKILL)
        await self.clear_record()
        raise LifecycleError(
            f"llama-server did not answer /health within {HEALTH_TIMEOUT:.0f} s", await self._new_log(log, offset)
        )

    async def _hub_env(self) -> tuple[HubEnv, dict[str, str]]:
        """The hub settings for a start, the token (if any) written to its 0600 file beside the key: the spawn
        script reads it into HF_TOKEN, so it is in no argv here or there."""
        m = self.machine
        cache = await self.transport.expand(m.hub_cache) if m.hub_cache else None
        token = os.environ.get(m.hub_token_env) if m.hub_token_env else None
        hub = hub_env(m, token, cache)
        if hub.token is None:
            return hub, {}
        path = posixpath.join(await self.state_dir(), TOKEN_FILE)
        # Through the write script's stdin: write_file_atomic may pass small contents as an argument, which `ps`
        # shows to every user of the serving machine while it runs.
        res = await self.transport.run(token_write_argv(path), input=token_stdin(hub.token))
        if not res.ok:
            raise LifecycleError(f"cannot write the hub token file on {m.name} ({path})")
        return hub, {TOKEN_ENV: path}

    async def _confirm_running(self, rec: RouterRecord) -> bool | None:
        """Over ssh, one request instead of three: the pid still that process, then the record "running", then
        the start lock released (lifecycle/look_request.py). Whether it was that process; None where this is not done
        here or the answer is not one (the caller then takes the three steps itself)."""
        if self.transport.is_local:
            return None
        running = replace(rec, state=RouterState.RUNNING)
        argv, stdin = confirm_running_request(rec.pid, rec.started, await self.lock_path(), await self.record_path(),
                                              running.to_json())  # fmt: skip
        # Released unless the answer says otherwise: with no answer (the link lost) the far side may have released
        # it, and removing it again could remove the lock of the llamaherd that took it next (a lock left behind
        # goes stale after LOCK_STALE_AFTER).
        self._lock_released = True
        r = await self.transport.run(argv, input=stdin)
        self._lock_released = r.returncode == CONFIRMED
        if r.returncode == NOT_WRITTEN:
            detail = r.stderr.decode(errors="replace").strip() or "exit code 1"
            raise LifecycleError(f"cannot write the router's record on {self.machine.name}: {detail}")
        if r.returncode == CONFIRMED:
            return True
        return False if r.returncode == NOT_THAT_PROCESS else None

    async def _port(self) -> int:
        return self.machine.router_port or await self.transport.free_port()

    async def _default_preset(self, preset: str) -> None:
        if await self.transport.stat(preset) is None:
            await self._new_preset(preset)

    async def _new_preset(self, preset: str) -> None:
        """A preset file that does not exist, the default one or the one `preset =` names, is made before the
        router is spawned (llama-server exits without it); one that cannot be made stops the start, saying why."""
        text = new_preset_text(self.machine.name, self.machine.router)
        try:
            await self.transport.write_file_atomic(preset, text.encode(), mode=0o600)
        except WriteFailed as e:
            raise LifecycleError(
                f"the preset file {preset} does not exist on {self.machine.name}, and it could not be made: {e.cause}"
            ) from None

    def literal_program(self) -> str | None:
        """The program as the far side will run it, when that needs nothing read there first (no ~ or $ in it)."""
        if self.transport.is_local:
            return None
        p = self.machine.program or "llama-server"
        return p if "~" not in p and "$" not in p else None

    async def program(self) -> str:
        if self.machine.program:
            return await self.transport.expand(self.machine.program)
        if self.transport.is_local:
            found = find_llama_server()
            if found is None:
                raise program_not_found()
            return found
        return "llama-server"  # on the remote PATH

    @contextlib.asynccontextmanager
    async def _machine_lock(self) -> AsyncIterator[Look | None]:
        """A lock on the serving machine (mkdir is atomic there, locally and over ssh) for other processes. Over
        ssh, the first request that takes it also looks at the router (lifecycle/look_request.py) once it holds it."""
        lock = await self.lock_path()
        t = self.transport
        deadline = time.monotonic() + HEALTH_TIMEOUT + 10
        first = True
        found: Look | None = None
        while True:
            if first:  # the state directory made private and the lock taken in one request
                first = False
                taken, found = await self._private_dirs(lock)
                if taken:
                    break
            elif (await t.run(["mkdir", lock])).ok:
                break
            info = await t.stat(lock)
            if info is not None and time.time() - info.mtime > LOCK_STALE_AFTER:
                await t.run(["rmdir", lock])  # a holder that died mid-start
                continue
            if time.monotonic() > deadline:
                raise LifecycleError(f"another llamaherd is starting the router on {self.machine.name} ({lock})")
            await asyncio.sleep(0.1)
        self._lock_released = False
        try:
            yield found
        finally:
            if not self._lock_released:
                await t.run(["rmdir", lock])
            self._lock_released = False

    async def _private_dirs(self, lock: str) -> tuple[bool, Look | None]:
        """Make the state directories (private); then try to take the lock: whether it was taken, and over ssh
        the look taken once it was (the look's own exit code is its answer's last line)."""
        d = await self.state_dir()
        base = await self.transport.state_dir()
        script = f'{{ {_PRIVATE_DIRS}; }} || exit 1; mkdir -- "$5" 2>/dev/null || exit {_LOCK_TAKEN}'
        log = await self.log_path()
        argv = ["sh", "-c", script, "sh", d, base, posixpath.join(base, "routers"), log, lock]
        remote = not self.transport.is_local
        plan, self._plan = self._plan, None
        stdin: bytes | None = None
        if remote:
            argv[2] = script + THEN_LOOK
            argv += self._look_argv()[2:]  # LOOK_SCRIPT and its parameters
        if remote and plan is not None:
            argv[2] += THEN_PREPARE
            key_path, record_path, preset = await self.key_path(), await self.record_path(), await self.preset_path()
            args, stdin = prepare_request(plan[0], plan[1], key_path, record_path, log, preset)
            argv += args
        r = await self.transport.run(argv, input=stdin)
        if r.returncode == _LOCK_TAKEN:
            return False, None
        if not r.ok:
            detail = r.stderr.decode(errors="replace").strip() or f"exit code {r.returncode}"
            raise LifecycleError(f"cannot make the state directory {d} on {self.machine.name}: {detail}")
        if not remote:
            return True, None
        out = r.stdout
        if plan is not None:
            out, self._prepared = split_prepared(out, log, await self.preset_path())
        return True, parse_locked_look(out)

    # ---- stopping ----

    async def stop(self) -> RouterStatus:
        """Stop on request: mark the record "stopping" first, then SIGTERM, then SIGKILL after a grace period."""
        rec, alive, _ = await self._look_recorded()
        if rec is None or not alive:
            return replace(await self._status_of(rec, alive), already=True)
        rec = replace(rec, state=RouterState.STOPPING, stopped_at=time.time())
        t = self.transport
        if t.is_local:
            await self.write_record(rec)
            await t.kill(rec.pid, signal.SIGTERM)
        else:  # one request over ssh: the record says "stopping" before the signal is sent, as above
            await self._mark_and_signal(rec, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        while time.monotonic() < deadline:
            if not await self.is_same_process(rec):
                return RouterStatus(RouterState.STOPPED, rec, reason="stopped on request")
            await asyncio.sleep(0.1)
        await t.kill(rec.pid, signal.SIGKILL)
        return RouterStatus(RouterState.STOPPED, rec, reason="stopped on request (killed after a 15 s grace period)")

    async def _mark_and_signal(self, rec: RouterRecord, sig: int) -> None:
        """Write the record (as write_file_atomic's script does when there is no SFTP), then signal its pid."""
        argv, stdin = write_then_signal_request(await self.record_path(), rec.to_json(), sig, rec.pid)
        r = await self.transport.run(argv, input=stdin)
        if r.returncode == 1:
            detail = r.stderr.decode(errors="replace").strip() or "exit code 1"
            raise LifecycleError(f"cannot mark the router on {self.machine.name} as stopping: {detail}")
