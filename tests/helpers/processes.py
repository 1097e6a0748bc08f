"""Processes a transport test starts: awkward arguments, and ending them by pid."""

from __future__ import annotations

from pathlib import Path

import psutil

from tests.helpers.wait import eventually

# Arguments a shell would mangle: each must reach the program literally, and none may run anything.
WEIRD = [
    "two words",
    "it's",
    'say "hi"',
    "$(touch {pwned})",
    "`touch {pwned}`",
    "; touch {pwned}",
    "*",
    "$HOME",
    "back\\slash",
    "new\nline",
    "",
]


def weird_args(tmp_path: Path) -> tuple[list[str], Path]:
    pwned = tmp_path / "pwned"
    return [w.format(pwned=pwned) for w in WEIRD], pwned


def settled(pid: int) -> bool:
    """`sh -c "sleep & exec sleep"` has become two sleeps (before that the figures are the wrappers')."""
    p = psutil.Process(pid)
    return p.name() == "sleep" and [c.name() for c in p.children()] == ["sleep"]


def gone_or_zombie(pid: int, *, kill: bool = False, timeout: float = 3.0) -> bool:
    """Whether pid ended within timeout. A zombie counts as ended: where pid 1 does not reap orphans (some
    containers), a detached process that exited stays a zombie forever."""
    try:
        p = psutil.Process(pid)
        if kill:
            p.kill()
        return eventually(lambda: p.status() == psutil.STATUS_ZOMBIE, timeout, step=0.02)
    except psutil.NoSuchProcess:
        return True


def stop(pid: int) -> None:
    """Kill a process a test started, by pid, and wait for it to be gone (or a zombie nobody reaps)."""
    assert gone_or_zombie(pid, kill=True)


def pending_signals(pid: int) -> set[int]:
    """Signals sent to pid and not yet acted on (thread and process-wide). A fatal signal shows here, as
    itself or as the SIGKILL the kernel turns it into, until the process is gone: so a check that nothing
    is pending right after the moment a signal would have been sent needs no sleep."""
    pending = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("SigPnd:", "ShdPnd:")):
                pending |= int(line.split()[1], 16)
    return {n for n in range(1, 65) if pending >> (n - 1) & 1}
