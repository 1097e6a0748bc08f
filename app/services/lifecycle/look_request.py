"""A managed router's record, whether its process is still that process, and its key, in one remote request; and
the other steps of start and stop that go together in one request over ssh.

Every command begins by reading the record and then asking about the pid it names: two round trips over ssh,
one after the other. The script below does both on the far side (and reads the key file beside the record,
which a client of the router needs next), so it is one request; and since it needs no value from this side
but the router's name, a command can ask for it before connecting (Transport.ask_early), and it rides along
with the remote agent's start at no round trip of its own.

The far side finds the state directory as expand_template does ($XDG_STATE_HOME when absolute, else
$HOME/.local/state); the directory it used is the answer's first line, and an answer for another directory
than ours, or one that does not parse, is not used (the caller reads the record the usual way).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from app.services.hosts import proc_probes
from app.services.hosts.process_start import ProcStart
from app.services.hosts.shell_scripts import BOOT_ID_LINE, MISSING, WRITE_SCRIPT

KEY_READ_LIMIT = 4096
NO_KEY_FILE, KEY_UNREADABLE = -1, -2
# $1: the router's directory under the state base ("llamaherd/routers/NAME"); $2: the key file's name.
# Output: the directory; the key file's size (NO_KEY_FILE, KEY_UNREADABLE) and then that many bytes of it (cut at
# KEY_READ_LIMIT); and when there is a record (else exit MISSING): the pid it names (0 if none); CLK_TCK; the btime
# line; the boot id (empty if none); /proc/PID/stat (empty when gone); the record, to the end.
LOOK_SCRIPT = f"""case ${{XDG_STATE_HOME-}} in /*) b=$XDG_STATE_HOME ;; *) b=$HOME/.local/state ;; esac
LC_ALL=C; export LC_ALL  # so that ${{#k}} counts bytes
d=$b/$1
printf '%s\\n' "$d"
if [ -r "$d/$2" ]; then k=$(head -c {KEY_READ_LIMIT} -- "$d/$2"); printf '%s\\n%s' "${{#k}}" "$k"
elif [ -e "$d/$2" ]; then echo {KEY_UNREADABLE}; else echo {NO_KEY_FILE}; fi
[ -e "$d/record.json" ] || exit {MISSING}
r=$(cat -- "$d/record.json") || exit 1
p=$(printf '%s\\n' "$r" | sed -n 's/^ *"pid": *\\([0-9][0-9]*\\), *$/\\1/p' | head -n 1)
printf '\\n%s\\n' "${{p:-0}}"
getconf CLK_TCK 2>/dev/null || echo 100
grep "^btime " /proc/stat || echo
{BOOT_ID_LINE}
{{ [ -n "$p" ] && cat "/proc/$p/stat" 2>/dev/null; }} || echo
printf '%s' "$r"
"""


@dataclass(frozen=True)
class Look:
    directory: str
    record: bytes | None  # None: there is no record
    pid: int  # the pid the far side found in the record (0: none)
    start: ProcStart | None  # that pid's start, None when it is gone or a zombie
    key_file: bytes | None  # None: the key file exists but could not be read
    key_exists: bool = True


def look_argv(router_dir: str, key_file: str) -> list[str]:
    return ["sh", "-c", LOOK_SCRIPT, "sh", router_dir, key_file]


def parse_look(rc: int, out: bytes) -> Look | None:
    """The answer, or None when it is not one (the caller then reads the record the usual way)."""
    if rc not in (0, MISSING):
        return None
    directory, _, rest = out.partition(b"\n")
    klen_s, nl, rest = rest.partition(b"\n")
    try:
        klen = int(klen_s)
    except ValueError:
        return None
    if not nl or klen > min(KEY_READ_LIMIT, len(rest)) or klen < KEY_UNREADABLE:
        return None
    key: bytes | None = rest[:klen] if klen >= 0 else (b"" if klen == NO_KEY_FILE else None)
    rest = rest[max(klen, 0) :]
    where = directory.decode(errors="surrogateescape")
    if rc == MISSING:
        return Look(where, None, 0, None, key, klen != NO_KEY_FILE) if not rest.strip(b"\n") else None
    parts = rest.split(b"\n", 6)
    if len(parts) != 7 or parts[0]:
        return None
    _, pid_s, clk_s, btime_s, boot_s, stat_s, record = parts
    try:
        pid = int(pid_s)
        start: ProcStart | None = None
        if stat_s.strip():
            st = proc_probes.parse_pid_stat(stat_s.decode(errors="replace"))
            btime = proc_probes.parse_btime(btime_s.decode(errors="replace"))
            if st.state != "Z":
                start = proc_probes.proc_start(st.starttime, int(clk_s), btime, boot_s.decode(errors="replace"))
    except ValueError:
        return None
    return Look(where, record, pid, start, key, klen != NO_KEY_FILE)


# Appended to a script that took the start lock (its five parameters shifted away, then LOOK_SCRIPT and its own):
# the look once the lock is held, with the look's exit code as the last line.
THEN_LOOK = '\nshift 5; s=$1; shift; sh -c "$s" "$@"; r=$?; echo; echo "$r"'


def parse_locked_look(out: bytes) -> Look | None:
    rest, _, rc = out.removesuffix(b"\n").rpartition(b"\n")
    return parse_look(int(rc), rest) if rc.strip().isdigit() else None


# $1 WRITE_SCRIPT, $2 path, $3 mode, $4 signal, $5 pid; stdin the data's base64 (never an argument: `ps` shows those
# to every user of the machine): the write, and only then the signal (stop marks the record "stopping" before
# SIGTERM, so watchers say "stopped on request", not "crashed").
_WRITE_THEN_SIGNAL = 'sh -c "$1" sh "$2" "$3" >/dev/null || exit 1; kill -"$4" "$5" 2>/dev/null || exit 2'


def stdin_of(data: bytes) -> bytes:
    """`data` as WRITE_SCRIPT reads it on stdin: one base64 line."""
    return base64.b64encode(data) + b"\n"


def write_then_signal_request(path: str, data: bytes, sig: int, pid: int) -> tuple[list[str], bytes]:
    """One request instead of two (exit 1: not written, nothing signalled; 2: written, the signal failed):
    (argv, stdin)."""
    argv = ["sh", "-c", _WRITE_THEN_SIGNAL, "sh", WRITE_SCRIPT, path, "600", str(int(sig)), str(int(pid))]
    return argv, stdin_of(data)


# $1 pid, $2 its start time (centiseconds since the epoch), $3 the start lock, $4 WRITE_SCRIPT, $5 the record, $6
# its mode, $7 the boot id ("" if unknown), $8 the start in centiseconds since boot; stdin the record's base64. A
# start's last three steps in one request: the pid is still that process (as proc_start.same_process decides: boot
# id and start since boot within 2 cs where known, else the epoch start within 1 s as same_start), and only then the
# record says "running" and the lock is released, in that order: another llamaherd waiting on the lock finds the
# running record. Exit 0: done; 3: not that process (nothing written, the lock kept); 1: the write failed (the lock
# kept).
_CONFIRM_RUNNING = """p=$1 want=$2 lock=$3 w=$4 rec=$5 mode=$6 boot=$7 since=$8
s=$(cat "/proc/$p/stat" 2>/dev/null) || exit 3
c=$(getconf CLK_TCK 2>/dev/null) || c=100
set -f
set -- ${s##*") "}
[ "$#" -ge 20 ] && [ "$1" != Z ] || exit 3
l=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null)
if [ -n "$boot" ] && [ -n "$l" ]; then
  [ "$l" = "$boot" ] || exit 3
  d=$(( ${20} * 100 / c - since )); t=2
else
  b=$(sed -n 's/^btime //p' /proc/stat)
  d=$(( b * 100 + ${20} * 100 / c - want )); t=100
fi
[ "$d" -ge "-$t" ] && [ "$d" -le "$t" ] || exit 3
sh -c "$w" sh "$rec" "$mode" >/dev/null || exit 1
rmdir -- "$lock" 2>/dev/null
exit 0
"""
CONFIRMED, NOT_THAT_PROCESS, NOT_WRITTEN = 0, 3, 1


def confirm_running_request(
    pid: int, start: ProcStart, lock: str, record_path: str, data: bytes
) -> tuple[list[str], bytes]:
    """(argv, stdin) of _CONFIRM_RUNNING."""
    want = str(round(start.epoch * 100))
    boot, since = "", "0"
    if start.boot_relative and start.since_boot is not None:
        boot, since = start.boot_id, str(round(start.since_boot * 100))
    argv = ["sh", "-c", _CONFIRM_RUNNING, "sh", str(int(pid)), want, lock, WRITE_SCRIPT, record_path, "600", boot,
            since]  # fmt: skip
    return argv, stdin_of(data)
