"""Running hooks: each situation that begins runs the hooks `on` it (after their `sustain`, if it still holds), as a
process of its own with what happened in its environment, bounded in time, in output and in how many run at once.

A hook never blocks the fleet's follower: runs are tasks, at most MAX_RUNNING at once (the rest wait their turn, up to
MAX_WAITING; beyond that a run is dropped and said). A failure (exit status, a time-out, a command that cannot
start) is said once per hook until that hook succeeds again, so a hook broken for the night is one line, not one a
minute.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

from app.config_hooks import HookConfig
from app.services.core.fleet_events import FleetEvent
from app.services.core.textsafe import visible
from app.services.core.waits import within
from app.services.hooks.triggers import Change, Situation, Triggers

MAX_RUNNING = 4
MAX_WAITING = 64
OUTPUT_BOUND = 4096
"""Bytes of a hook's output kept (its last ones), for the one line said when it fails."""


@dataclass(frozen=True)
class HookRun:
    """One finished run: what ran, for what, and how it ended."""

    hook: HookConfig
    situation: Situation
    exit_code: int | None
    """None: it did not finish (timed out and killed) or could not start."""
    output: str
    error: str = ""


@dataclass
class HookRunner:
    hooks: Sequence[HookConfig]
    said: Callable[[str], None]
    """Where a failure is said (a toast in the dashboard, stderr in `llamaherd watch`), once per broken hook."""
    env_of: Callable[[str], Awaitable[Mapping[str, str]]] | None = None
    """Extra variables for a machine (LLAMAHERD_URL, LLAMAHERD_API_KEY): never on the command line."""
    ran: Callable[[HookRun], None] = lambda run: None
    _triggers: Triggers = field(default_factory=Triggers)
    _pending: dict[tuple[tuple[str, str, str], int], asyncio.TimerHandle] = field(default_factory=dict)
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)
    _slots: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(MAX_RUNNING))
    _broken: set[int] = field(default_factory=set)

    def feed(self, ev: FleetEvent) -> None:
        for change in self._triggers.feed(ev):
            self._change(change)

    async def follow(self, events: asyncio.Queue[FleetEvent]) -> None:
        """Feed every event of a fleet subscription, until cancelled."""
        while True:
            self.feed(await events.get())

    def _change(self, change: Change) -> None:
        s = change.situation
        for i, hook in enumerate(self.hooks):
            if s.event not in hook.on:
                continue
            key = (s.key, i)
            if not change.began:
                handle = self._pending.pop(key, None)
                if handle is not None:
                    handle.cancel()  # it did not hold for `sustain`: a blip, no run
                continue
            if key in self._pending:
                continue
            if hook.sustain <= 0:
                self._start(i, hook, s)
            else:
                loop = asyncio.get_running_loop()
                self._pending[key] = loop.call_later(hook.sustain, self._sustained, key, i, hook, s)

    def _sustained(self, key: tuple[tuple[str, str, str], int], i: int, hook: HookConfig, s: Situation) -> None:
        self._pending.pop(key, None)
        self._start(i, hook, s)

    def _start(self, i: int, hook: HookConfig, s: Situation) -> None:
        if len(self._tasks) >= MAX_RUNNING + MAX_WAITING:
            self.said(f"hook {' '.join(hook.command)[:60]} not run for {s.event} on {s.machine}: too many waiting")
            return
        task = asyncio.get_running_loop().create_task(self._run(i, hook, s), name=f"hook {s.event} {s.machine}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, i: int, hook: HookConfig, s: Situation) -> None:
        async with self._slots:
            extra: Mapping[str, str] = {}
            if self.env_of is not None:
                with contextlib.suppress(Exception):  # a machine that cannot say its URL still gets its hook run
                    extra = await self.env_of(s.machine)
            run = await run_hook(hook, s, extra)
        self.ran(run)
        if run.exit_code == 0:
            self._broken.discard(i)
            return
        if i in self._broken:
            return  # said already: once per broken hook, until it works again
        self._broken.add(i)
        why = run.error or f"exit status {run.exit_code}"
        tail = run.output.strip().splitlines()[-1:] if run.output.strip() else []
        self.said(visible(f"hook {hook.command[0]} ({s.event} on {s.machine}) failed: {why}"
                          + (f": {tail[0][:200]}" if tail else "")))  # fmt: skip

    async def close(self) -> None:
        for handle in self._pending.values():
            handle.cancel()
        self._pending.clear()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def hook_env(s: Situation, extra: Mapping[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    env.update({
        "LLAMAHERD_EVENT": s.event,
        "LLAMAHERD_MACHINE": s.machine,
        "LLAMAHERD_MODEL": s.model,
        "LLAMAHERD_REASON": s.reason,
    })  # fmt: skip
    return env


@dataclass(frozen=True)
class CommandRun:
    """How an operator's command (a hook's, a plugin's) ended."""

    exit_code: int | None
    """None: it did not finish (timed out and killed) or could not start."""
    output: str
    """Its stdout and stderr together, the last OUTPUT_BOUND bytes."""
    error: str = ""


async def run_bounded(command: Sequence[str], env: Mapping[str, str], timeout: float) -> CommandRun:
    """Run a command of the operator's: its own process group (its children go with it when it is killed), stdin
    closed, output bounded, killed at `timeout`."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=dict(env),
            start_new_session=True,
        )
    except OSError as e:
        return CommandRun(None, "", f"cannot run {command[0]}: {e.strerror or e}")
    kept = bytearray()

    async def read() -> None:
        assert proc.stdout is not None
        while chunk := await proc.stdout.read(65536):
            kept.extend(chunk)
            del kept[:-OUTPUT_BOUND]

    try:
        await within(asyncio.gather(read(), proc.wait()), timeout)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 9)
        await proc.wait()
        return CommandRun(None, kept.decode(errors="replace"), f"timed out after {timeout:g} s")
    except asyncio.CancelledError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 9)
        raise
    return CommandRun(proc.returncode, kept.decode(errors="replace"))


async def run_hook(hook: HookConfig, s: Situation, extra: Mapping[str, str]) -> HookRun:
    """Run one hook for one situation, what happened in its environment."""
    done = await run_bounded(hook.command, hook_env(s, extra), hook.timeout)
    return HookRun(hook, s, done.exit_code, done.output, done.error)
