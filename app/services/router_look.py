"""A managed router's record, whether its process is still that process, and its key, in one remote request.

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

from dataclasses import dataclass

from app.services import probes
from app.services.ssh_scripts import MISSING

KEY_READ_LIMIT = 4096
# $1: the router's directory under the state base ("llamaherd/routers/NAME"); $2: the key file's name.
# Output: the directory; the pid named by the record (0 if none); CLK_TCK; the btime line; /proc/PID/stat (empty
# when gone); the key file's size and then that many bytes (cut at KEY_READ_LIMIT); the record, to the end.
LOOK_SCRIPT = f"""case ${{XDG_STATE_HOME-}} in /*) b=$XDG_STATE_HOME ;; *) b=$HOME/.local/state ;; esac
LC_ALL=C; export LC_ALL  # so that ${{#k}} counts bytes
d=$b/$1
printf '%s\\n' "$d"
[ -e "$d/record.json" ] || exit {MISSING}
r=$(cat -- "$d/record.json") || exit 1
p=$(printf '%s\\n' "$r" | sed -n 's/^ *"pid": *\\([0-9][0-9]*\\), *$/\\1/p' | head -n 1)
printf '%s\\n' "${{p:-0}}"
getconf CLK_TCK 2>/dev/null || echo 100
grep "^btime " /proc/stat || echo
{{ [ -n "$p" ] && cat "/proc/$p/stat" 2>/dev/null; }} || echo
k=
[ -r "$d/$2" ] && k=$(head -c {KEY_READ_LIMIT} -- "$d/$2")
printf '%s\\n%s%s' "${{#k}}" "$k" "$r"
"""


@dataclass(frozen=True)
class Look:
    directory: str
    record: bytes | None  # None: there is no record
    pid: int  # the pid the far side found in the record (0: none)
    start_time: float | None  # that pid's start time, None when it is gone or a zombie
    key_file: bytes


def look_argv(router_dir: str, key_file: str) -> list[str]:
    return ["sh", "-c", LOOK_SCRIPT, "sh", router_dir, key_file]


def parse_look(rc: int, out: bytes) -> Look | None:
    """The answer, or None when it is not one (the caller then reads the record the usual way)."""
    if rc == MISSING:
        only = out.decode(errors="surrogateescape").removesuffix("\n")
        return Look(only, None, 0, None, b"") if "\n" not in only else None
    if rc != 0:
        return None
    parts = out.split(b"\n", 6)
    if len(parts) != 7:
        return None
    directory, pid_s, clk_s, btime_s, stat_s, klen_s, rest = parts
    try:
        pid, klen = int(pid_s), int(klen_s)
        start: float | None = None
        if stat_s.strip():
            st = probes.parse_pid_stat(stat_s.decode(errors="replace"))
            btime = probes.parse_btime(btime_s.decode(errors="replace"))
            if st.state != "Z":
                start = probes.start_time(st.starttime, int(clk_s), btime)
    except ValueError:
        return None
    if not 0 <= klen <= min(KEY_READ_LIMIT, len(rest)):
        return None
    return Look(directory.decode(errors="surrogateescape"), rest[klen:], pid, start, rest[:klen])
