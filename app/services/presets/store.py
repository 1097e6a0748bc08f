"""Reading, editing and writing a router's preset file on the machine that serves it.

Every edit is read back from the file first (an adopted router serves sections this process never wrote), is
validated before anything is written, is written only when the text differs, atomically, after a timestamped
backup (the last 5 kept), and is refused when the file changed on disk since it was read. A running router is then
asked to reload, and the caller is told beforehand which loaded models that reload will unload: those whose
section changed, and no others.
"""

from __future__ import annotations

import asyncio
import contextlib
import posixpath
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import urlsplit

from app.services.core.errors import PresetError, RouterError, SectionExists, TransportError, WriteFailed
from app.services.core.router_types import ModelInfo, RouterState
from app.services.machine.machine import Machine
from app.services.presets.accepted_keys import known_keys_from_help
from app.services.presets.diff import changed_sections, unified_diff
from app.services.presets.fields import validate_key, validate_section_name, validate_value
from app.services.presets.ini_text import GLOBAL_SECTION, PresetDoc, check_new_model_name
from app.services.presets.lock import preset_lock
from app.services.presets.sections import validate_mapping
from app.services.presets.write_once import backup_then_write, fits

BACKUPS_KEPT = 5
_known_keys_cache: dict[tuple[str, str], frozenset[str]] = {}

Edit = Callable[[PresetDoc], PresetDoc]


class PresetConflict(PresetError):
    """The file changed on disk since it was read; `diff` goes from the file as it is on disk now to the edit."""

    def __init__(self, path: str, diff: str) -> None:
        self.path = path
        self.diff = diff
        super().__init__(
            f"{path} changed on disk since it was read; nothing was written. On disk now vs your edit:\n{diff}"
        )


@dataclass(frozen=True)
class PresetSnapshot:
    path: str
    text: str
    exists: bool

    @property
    def doc(self) -> PresetDoc:
        return PresetDoc.parse(self.text)


@dataclass(frozen=True)
class PresetPlan:
    """What an edit would do, shown before anything is written."""

    snapshot: PresetSnapshot
    new_text: str
    diff: str
    changed: frozenset[str]
    will_unload: tuple[str, ...]  # loaded models the reload will restart
    router_running: bool

    @property
    def no_change(self) -> bool:
        return self.new_text == self.snapshot.text


@dataclass(frozen=True)
class PresetResult:
    plan: PresetPlan
    written: bool
    backup: str | None
    reloaded: bool


class PresetStore:
    def __init__(self, machine: Machine) -> None:
        if machine.manager is None:
            raise PresetError(f"{machine.name} is attach-only: its preset file belongs to whoever runs that router")
        self.machine = machine
        self.manager = machine.manager
        self.transport = machine.transport
        self._lock_depth = 0
        self._read_in_hold: PresetSnapshot | None = None  # the last read while this store held the lock
        self._running: asyncio.Future[list[ModelInfo]] | None = None  # asked ahead by ask_running()
        self._mode_ahead: tuple[PresetSnapshot, int] | None = None  # the file's mode, read with that snapshot

    @contextlib.asynccontextmanager
    async def locked(self, *, create_dir: bool = True) -> AsyncIterator[None]:
        """Hold the preset's lock (on the serving machine) for the body: read, plan and apply inside it and
        a concurrent writer from any process waits, then sees this edit. Re-entrant within this store."""
        if self._lock_depth:
            self._lock_depth += 1
            try:
                yield
            finally:
                self._lock_depth -= 1
            return
        async with preset_lock(self.transport, await self.path(), create_dir=create_dir):
            self._lock_depth = 1
            try:
                yield
            finally:
                self._lock_depth, self._read_in_hold = 0, None

    async def path(self) -> str:
        return await self.manager.preset_path()

    async def read(self) -> PresetSnapshot:
        path = await self.path()
        try:
            data = await self.transport.read_file(path)
        except FileNotFoundError:
            return PresetSnapshot(path, "", exists=False)
        try:
            snap = PresetSnapshot(path, data.decode("utf-8"), exists=True)
        except UnicodeDecodeError:
            raise PresetError(f"{path} is not UTF-8 text; llamaherd will not edit it") from None
        if self._lock_depth:
            self._read_in_hold = snap
        return snap

    async def known_keys(self) -> frozenset[str]:
        """Keys the machine's own llama-server accepts (from its --help), cached per machine and program."""
        program = await self.manager.program()
        key = (self.machine.name, program)
        if key not in _known_keys_cache:
            r = await self.transport.run([program, "--help"], timeout=30)
            text = (r.stdout + r.stderr).decode(errors="replace")
            keys = known_keys_from_help(text)
            if not keys:
                raise PresetError(f"could not read the options of {program} on {self.machine.name} (--help)")
            _known_keys_cache[key] = keys
        return _known_keys_cache[key]

    def ask_running(self) -> None:
        """Ask the router for its running models now, for the next plan: a headless edit asks while the lock is
        being taken (the router does not depend on the preset's lock; its models can change after a plan anyway)."""
        if self._running is None:
            self._running = asyncio.ensure_future(self.running_models())

    async def close(self) -> None:
        """Drop what was asked ahead and not used."""
        ahead, self._running = self._running, None
        if ahead is not None and not ahead.done():
            ahead.cancel()
        if ahead is not None:
            with contextlib.suppress(BaseException):
                await ahead

    async def running_models(self) -> list[ModelInfo]:
        try:
            client = await self.machine.connect_router()
            return [m for m in await client.models() if m.state.running]
        except RouterError:
            return []

    async def plan(self, edit: Edit, snapshot: PresetSnapshot | None = None) -> PresetPlan:
        # The file and the router's running models are asked together (over ssh: overlapping round trips).
        ahead, self._running = self._running, None
        # Inside a hold of the lock over ssh, the file's mode too: the write can then follow the plan at once.
        mode_ahead = snapshot is None and self._lock_depth > 0 and not self.transport.is_local
        snap, running, mode = await asyncio.gather(
            _given(snapshot) if snapshot else self.read(),
            ahead if ahead is not None else self.running_models(),
            self._mode_for(await self.path()) if mode_ahead else _given(None),
        )
        self._mode_ahead = (snap, mode) if mode is not None else None
        old = snap.doc
        new = edit(old)
        new_text = new.text()
        changed = frozenset(changed_sections(old, new))
        router_running = self.machine.client is not None and self.machine.view.router_state is RouterState.RUNNING
        # [*] cascades under every model: then each running model's final options may have changed.
        spread = GLOBAL_SECTION in changed
        hit = [m.id for m in running if spread or m.id in changed]
        return PresetPlan(
            snapshot=snap,
            new_text=new_text,
            diff=unified_diff(snap.text, new_text, snap.path),
            changed=changed,
            will_unload=tuple(hit),
            router_running=router_running,
        )

    async def apply(self, plan: PresetPlan) -> PresetResult:
        if plan.no_change:
            return PresetResult(plan, written=False, backup=None, reloaded=False)  # identical text: no reload
        snap = plan.snapshot
        client = self.machine.client
        if plan.router_running and client is not None:  # the reload's channel opens while the file is written
            port = urlsplit(client.base_url).port
            if port is not None:
                self.transport.warm_forward(port)
        # Check and write under one lock: otherwise two writers can both pass the check and one edit is lost.
        async with self.locked(create_dir=not snap.exists):
            # A plan read in this same hold of the lock (`preset set`: read, plan, write at once) is what is on
            # disk for every llamaherd; read again only a plan made before (the dashboard's, shown for review).
            if snap is not self._read_in_hold:
                current = await self.read()
                if current.text != snap.text or current.exists != snap.exists:
                    diff = unified_diff(current.text, plan.new_text, snap.path, labels=("on disk now", "your edit"))
                    raise PresetConflict(snap.path, diff)
            try:
                ahead, self._mode_ahead = self._mode_ahead, None
                old, new = snap.text.encode("utf-8"), plan.new_text.encode("utf-8")
                backup: str | None
                if ahead is not None and ahead[0] is snap and snap.exists and fits(old, new):
                    # Over ssh: the backup, then the preset, in one request; old backups pruned meanwhile.
                    backup = self._backup_path(snap)
                    await asyncio.gather(
                        backup_then_write(self.transport, backup, old, snap.path, new, ahead[1]),
                        _quietly(self._prune_backups(snap.path, backup)),
                    )
                else:
                    backup, mode = await asyncio.gather(
                        self._backup(snap) if snap.exists else _given(None), self._mode_for(snap.path)
                    )
                    # Old backups are pruned while the preset is written (the new backup exists already); a
                    # prune that fails leaves them for the next edit and fails nothing.
                    prune = self._prune_backups(snap.path, backup) if backup else _given(None)
                    await asyncio.gather(self.transport.write_file_atomic(snap.path, new, mode=mode), _quietly(prune))
            except WriteFailed as e:  # one line naming the preset and why; its text is what it was
                backup_name = posixpath.basename(e.path)
                cause = e.cause if e.path == snap.path else f"{e.cause} (making its backup {backup_name})"
                raise WriteFailed(e.machine, snap.path, f"{cause}; the preset is as it was") from None
        return await self._reloaded(plan, backup)

    async def _reloaded(self, plan: PresetPlan, backup: str | None) -> PresetResult:
        reloaded = False
        if plan.router_running and self.machine.client is not None:
            await self.machine.client.reload()  # only against a running router; a stopped one reads it at start
            reloaded = True
        return PresetResult(plan, written=True, backup=backup, reloaded=reloaded)

    async def edit(self, edit: Edit) -> PresetResult:
        return await self.apply(await self.plan(edit))

    async def _mode_for(self, path: str) -> int:
        """A preset keeps the mode it had (an edit once turned a 0644 file into 0600); a new one is 0644 less what
        its directory withholds from others (0600 in a 0700 directory)."""
        info = await self.transport.stat(path)
        if info is not None and info.mode is not None:
            return info.mode & 0o777
        folder = await self.transport.stat(posixpath.dirname(path) or ".")
        return 0o644 & ((folder.mode if folder is not None and folder.mode is not None else 0o755) | 0o600)

    @staticmethod
    def _backup_path(snap: PresetSnapshot) -> str:
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + f"-{int(time.time() * 1000) % 1000:03d}"
        return f"{snap.path}.bak-{stamp}"

    async def _backup(self, snap: PresetSnapshot) -> str:
        path = self._backup_path(snap)
        await self.transport.write_file_atomic(path, snap.text.encode("utf-8"), mode=0o600)
        return path

    async def _prune_backups(self, preset: str, newest: str) -> None:
        """Keep the BACKUPS_KEPT newest backups, `newest` (just written, or being written) among them."""
        folder, base = posixpath.split(preset)
        files = await self.transport.list_files([folder], pattern=f"{base}.bak-*", max_depth=1)
        # Backups named before the milliseconds were added (`.bak-YYYYMMDD-HHMMSS`) count too: they were never
        # pruned, so every save from the dashboard seemed to leave one more. Their names sort in time order either way.
        pattern = re.compile(re.escape(base) + r"\.bak-\d{8}-\d{6}(-\d{3})?$")
        backups = sorted({newest, *(f.path for f in files if pattern.match(posixpath.basename(f.path)))})
        await asyncio.gather(*(self.transport.remove(old) for old in backups[:-BACKUPS_KEPT]))


# ---- validated edits (each refuses before anything is written) ----


def set_keys(section: str, values: Mapping[str, str], known: frozenset[str] | None) -> Edit:
    validate_section_name(section)
    checked = {validate_key(k, known): validate_value(k, v) for k, v in values.items()}

    def edit(doc: PresetDoc) -> PresetDoc:
        if not doc.has_section(section):
            check_new_model_name(section)
        for k, v in checked.items():
            doc = doc.set_key(section, k, v) if v else doc.unset_key(section, k)
        return doc

    return edit


def unset_keys(section: str, keys: list[str]) -> Edit:
    def edit(doc: PresetDoc) -> PresetDoc:
        if not doc.has_section(section):
            raise PresetError(f"no section [{section}] in the preset")
        for k in keys:
            doc = doc.unset_key(section, k)
        return doc

    return edit


def replace_section(section: str, values: Mapping[str, str], known: frozenset[str] | None) -> Edit:
    validate_section_name(section)
    checked = validate_mapping(values, known)

    def edit(doc: PresetDoc) -> PresetDoc:
        if not doc.has_section(section):
            check_new_model_name(section)
        return doc.replace_section(section, checked)

    return edit


def add_section(section: str, values: Mapping[str, str], known: frozenset[str] | None) -> Edit:
    check_new_model_name(section)  # "Add as" in model files and `preset add --name`
    checked = validate_mapping(values, known)

    def edit(doc: PresetDoc) -> PresetDoc:
        if doc.has_section(section):
            raise SectionExists(section)
        return doc.add_section(section, checked)

    return edit


def remove_section(section: str) -> Edit:
    def edit(doc: PresetDoc) -> PresetDoc:
        if not doc.has_section(section):
            raise PresetError(f"no section [{section}] in the preset")
        return doc.remove_section(section)

    return edit


_T = TypeVar("_T")


async def _quietly(step: Awaitable[object]) -> None:
    with contextlib.suppress(TransportError, OSError):
        await step


async def _given(value: _T) -> _T:
    """A value already known, where a coroutine is asked for (asyncio.gather)."""
    return value
