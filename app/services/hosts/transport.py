"""How llamaherd acts on a machine: run commands, start detached processes, move files, follow logs.

`Transport` is the interface; `LocalTransport` (hosts/local.py) is this machine, `SshTransport`
(ssh/transport.py) another one over a single asyncssh connection. Both share the shell scripts below so a process
started, or a file written, from one side looks the same read from the other.
"""

from __future__ import annotations

import contextlib
import random
import re
import signal
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Mapping, Sequence

from app.services.core.errors import TransportError
from app.services.core.host_types import Connection, FileInfo, HostStats, RunResult
from app.services.hosts.last_lines import LAST_LINES_SCRIPT, split_output
from app.services.hosts.process_start import ProcStart

STATE_DIR_TEMPLATE = "${XDG_STATE_HOME:-$HOME/.local/state}/llamaherd"
PORT_RANGE = (20000, 60000)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

StateCallback = Callable[[Connection, str], None]

# spawn_detached, the same on both sides. Positional parameters: log, cwd, NAME=VALUE | NAME FILE..., "--", argv...
# - The log is created (0600, parents 0700) in a subshell so the umask does not leak into the program.
# - `export "$1"` assigns the value literally; nothing from outside is ever parsed as shell text.
# - NAME FILE (a name without "=") takes the value from a file on that machine, so a secret such as an API key is
#   never an argument of any process (argv is world-readable in `ps`; a process's environment is not).
# - `setsid` gives the program its own session so neither a hangup nor the ssh channel closing reaches it;
#   `&` plus the shell exiting right after hands it to init, so nobody has to reap it.
# - No pipe is left attached: a chatty server once filled a 64 KB pipe nobody read and stalled.
SPAWN_SCRIPT = r"""log=$1; cwd=$2; shift 2
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
  case $1 in
    *=*) export "$1" || exit 2 ;;
    *) v=$(cat -- "$2") || exit 2; export "$1=$v" || exit 2; v=; shift ;;
  esac
  shift
done
shift
(umask 077 && mkdir -p -- "$(dirname -- "$log")" && : >>"$log") || exit 1
if [ -n "$cwd" ]; then cd -- "$cwd" || exit 1; fi
command -v "$1" >/dev/null 2>&1 || { echo "program not found: $1" >&2; exit 127; }
if command -v setsid >/dev/null 2>&1; then
  setsid nohup "$@" </dev/null >>"$log" 2>&1 &
else
  nohup "$@" </dev/null >>"$log" 2>&1 &
fi
echo "$!"
"""


def spawn_args(
    argv: Sequence[str],
    log_path: str,
    env: Mapping[str, str] | None,
    cwd: str | None,
    env_files: Mapping[str, str] | None = None,
) -> list[str]:
    """`sh -c SPAWN_SCRIPT sh ...` as an argv list. `env_files` maps a variable to a file holding its value."""
    if not argv:
        raise ValueError("spawn_detached needs a program")
    pairs: list[str] = []
    for k, v in (env or {}).items():
        if not _ENV_NAME.match(k):
            raise ValueError(f"not an environment variable name: {k!r}")
        pairs.append(f"{k}={v}")
    for k, path in (env_files or {}).items():
        if not _ENV_NAME.match(k):
            raise ValueError(f"not an environment variable name: {k!r}")
        pairs += [k, path]
    return ["sh", "-c", SPAWN_SCRIPT, "sh", log_path, cwd or "", *pairs, "--", *argv]


def parse_spawn_output(name: str, res: RunResult) -> int:
    if res.ok:
        last = res.stdout.decode(errors="replace").strip().splitlines()
        if last and last[-1].isdigit():
            return int(last[-1])
    detail = res.stderr.decode(errors="replace").strip() or f"exit code {res.returncode}"
    raise TransportError(f"{name}: could not start the process: {detail}")


def expand_template(path: str, home: str, xdg_state_home: str | None) -> str:
    """Expand the forms llamaherd supports: `~`, `~/...`, `$HOME`, `${HOME}` and
    `${XDG_STATE_HOME:-$HOME/.local/state}`, with values read on the machine the path belongs to.

    Anything else stays literal: user text is never handed to a shell to expand.
    """
    # The XDG spec says a relative value is invalid and must be ignored.
    state = xdg_state_home if xdg_state_home and xdg_state_home.startswith("/") else f"{home}/.local/state"
    out = path.replace("${XDG_STATE_HOME:-$HOME/.local/state}", state)
    out = out.replace("${XDG_STATE_HOME:-${HOME}/.local/state}", state)
    if out == "~" or out.startswith("~/"):
        out = home + out[1:]
    out = out.replace("${HOME}", home)
    return re.sub(r"\$HOME(?![A-Za-z0-9_])", lambda _m: home, out)


def pick_free_port(used: set[int], rng: random.Random | None = None) -> int:
    r = rng or random.Random()
    lo, hi = PORT_RANGE
    for _ in range(200):
        p = r.randint(lo, hi)
        if p not in used:
            return p
    # A crowded machine: choose among what is actually left rather than keep guessing.
    left = [p for p in range(lo, hi + 1) if p not in used]
    if not left:
        raise TransportError("no free port found in 20000-60000")
    return r.choice(left)


class Transport(ABC):
    """One machine. Every method is async and safe to call from the UI's event loop."""

    name: str
    is_local: bool

    def __init__(self, name: str) -> None:
        self.name = name
        self._state = Connection.CONNECTING
        self._state_reason = ""
        # Called as on_state_change(state, reason) on every change; set by the owner (the fleet).
        self.on_state_change: StateCallback | None = None

    # ---- connection state ----

    @property
    def state(self) -> Connection:
        return self._state

    @property
    def state_reason(self) -> str:
        return self._state_reason

    def _set_state(self, state: Connection, reason: str = "") -> None:
        if (state, reason) == (self._state, self._state_reason):
            return
        self._state, self._state_reason = state, reason
        cb = self.on_state_change
        if cb is not None:
            # A watcher's bug must not break the transport.
            with contextlib.suppress(Exception):
                cb(state, reason)

    def round_trip(self) -> float:
        """The link's measured round trip in seconds (0 where there is no link to measure)."""
        return 0.0

    def ask_early(self, argv: Sequence[str]) -> None:
        """A command whose answer is wanted right after connecting (a headless command's first look). Over ssh it
        is run when the connection's agent starts, at no round trip of its own, and the first `run` of the same
        argv soon after takes that answer. Elsewhere nothing is done early."""
        return None

    def warm_forward(self, local_port: int) -> None:
        """A request to this forwarded local port is about to be sent: over ssh its channel is opened now, so the
        request costs one round trip, not two. Elsewhere nothing."""
        return None

    @abstractmethod
    async def connect(self) -> None: ...

    @abstractmethod
    async def close(self) -> None: ...

    # ---- commands and processes ----

    @abstractmethod
    async def run(
        self, argv: Sequence[str], *, input: bytes | None = None, timeout: float | None = 30
    ) -> RunResult: ...

    @abstractmethod
    async def spawn_detached(
        self,
        argv: Sequence[str],
        *,
        log_path: str,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        env_files: Mapping[str, str] | None = None,
    ) -> int: ...

    @abstractmethod
    async def pid_alive(self, pid: int) -> bool: ...

    @abstractmethod
    async def process_start(self, pid: int) -> ProcStart | None: ...

    async def live_start(self, pid: int) -> ProcStart | None:
        """The start of a live (not zombie) process, or None: "is it still that process?" in one look."""
        if not await self.pid_alive(pid):
            return None
        return await self.process_start(pid)

    @abstractmethod
    async def process_argv(self, pid: int) -> tuple[str, ...] | None:
        """The command line of a live process (bounded), or None when it is gone or cannot be read."""

    @abstractmethod
    async def kill(self, pid: int, sig: int) -> bool: ...

    @abstractmethod
    async def process_tree_rss(self, pid: int) -> int | None: ...

    # ---- files ----

    async def last_lines(self, path: str, n: int, width: int) -> list[bytes] | None:
        """`tail -n n | cut -b 1-width` of a file, as lines; None when it cannot be read."""
        r = await self.run(["sh", "-c", LAST_LINES_SCRIPT, "sh", str(int(n)), path, str(int(width))])
        return split_output(r.stdout) if r.ok else None

    @abstractmethod
    async def read_file(self, path: str) -> bytes: ...

    @abstractmethod
    async def read_head(self, path: str, n: int) -> bytes: ...

    @abstractmethod
    async def write_file_atomic(self, path: str, data: bytes, mode: int = 0o600) -> None: ...

    @abstractmethod
    async def stat(self, path: str) -> FileInfo | None: ...

    @abstractmethod
    async def remove(self, path: str) -> None: ...

    @abstractmethod
    async def rename(self, src: str, dst: str) -> None: ...

    @abstractmethod
    async def list_files(self, dirs: Sequence[str], pattern: str = "*.gguf", max_depth: int = 2) -> list[FileInfo]: ...

    @abstractmethod
    async def expand(self, path: str) -> str: ...

    async def state_dir(self) -> str:
        """llamaherd's state directory on that machine (records, presets, logs)."""
        return await self.expand(STATE_DIR_TEMPLATE)

    # ---- network ----

    @abstractmethod
    async def free_port(self) -> int: ...

    @abstractmethod
    async def forward_port(self, remote_port: int) -> int: ...

    # ---- following and measuring ----

    @abstractmethod
    def tail_chunks(self, path: str, *, lines: int = 200) -> AsyncIterator[list[str]]:
        """`tail -F`: the last `lines` lines, then what arrives, as lists of whole lines read in large chunks (a
        busy router writes 20,000 lines a second: one await per line cost more than the lines themselves)."""

    async def tail(self, path: str, *, lines: int = 200) -> AsyncIterator[str]:
        async for chunk in self.tail_chunks(path, lines=lines):
            for line in chunk:
                yield line

    @abstractmethod
    async def host_stats(self) -> HostStats: ...


# Re-exported for callers that name signals without importing signal themselves.
SIGTERM = int(signal.SIGTERM)
SIGKILL = int(signal.SIGKILL)
