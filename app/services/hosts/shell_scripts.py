"""The constant shell scripts SshTransport runs on the far side. No value from outside is ever part of their text:
values reach them only as positional parameters ("$1", "$2", ...)."""

from __future__ import annotations

MISSING = 44  # exit code our scripts use for "no such file"

# CLK_TCK, the btime line, the boot id (empty line if none), /proc/PID/stat (hosts/process_start.py says why the
# boot id).
BOOT_ID_LINE = "cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo"
START_TIME_SCRIPT = f'getconf CLK_TCK 2>/dev/null || echo 100; grep "^btime " /proc/stat; {BOOT_ID_LINE}; ' + (
    'cat "/proc/$1/stat"'
)
ARGV_LIMIT = 64 * 1024  # bytes of /proc/PID/cmdline read
ARGV_SCRIPT = f'exec head -c {ARGV_LIMIT} "/proc/$1/cmdline"'
# spawn_detached's argv ("$@"), then START_TIME_SCRIPT's lines for the pid it printed last, after SPAWNED_MARK.
SPAWNED_MARK = b"\n@@llamaherd-spawned\n"
SPAWN_THEN_START_TIME = f"""out=$("$@") || {{ r=$?; printf '%s\\n' "$out"; exit "$r"; }}
printf '%s\\n' "$out"
p=$(printf '%s\\n' "$out" | tail -n 1)
printf '{SPAWNED_MARK.decode().strip()}\\n'
getconf CLK_TCK 2>/dev/null || echo 100; grep "^btime " /proc/stat; {BOOT_ID_LINE}; cat "/proc/$p/stat" 2>/dev/null
exit 0
"""
TREE_SCRIPT = "getconf PAGESIZE 2>/dev/null || echo 4096; cat /proc/[0-9]*/stat 2>/dev/null; exit 0"
PORTS_SCRIPT = "cat /proc/net/tcp /proc/net/tcp6 2>/dev/null; exit 0"
ENV_SCRIPT = 'printf "%s\\n%s" "$HOME" "${XDG_STATE_HOME-}"'


def _on_file(param: str, command: str) -> str:
    """`command` on the file named by positional parameter `param`, exiting MISSING when there is none. A file may
    go between the test and the command (a lock directory its holder removes, a record removed): a command that
    fails on a path gone by then says "missing" too, not an error."""
    gone = f'[ -e "{param}" ] || exit {MISSING}'
    return f"{gone}; {command} && exit 0; {gone}; exit 1"


READ_SCRIPT = _on_file("$1", 'cat -- "$1"')
HEAD_SCRIPT = _on_file("$2", 'head -c "$1" -- "$2"')
STAT_SCRIPT = _on_file("$1", 'find -L "$1" -maxdepth 0 -printf "%s %T@ %m\\n"')
RENAME_SCRIPT = f'[ -e "$1" ] || [ -L "$1" ] || exit {MISSING}; exec mv -f -- "$1" "$2"'
# The base64 write (small files through the remote shell, and where the server has no SFTP): $1 the path, $2 its
# mode; the data as base64 on stdin, never as an argument (`ps` shows arguments to every user of that machine) and
# never inside shell text, so no INI value depends on two layers of quoting. Over the remote shell, stdin is a
# here-document of base64 lines (ssh/here_document.py). The far side says what it wrote.
WRITE_SCRIPT = """p=$1; mode=$2
d=$(dirname -- "$p")
mkdir -p -- "$d" || exit 1
tmp=$(mktemp "$d/.llamaherd.XXXXXX") || exit 1
base64 -d >"$tmp" && chmod "$mode" "$tmp" && mv -f -- "$tmp" "$p" && printf "%s\\n" "$p" && exit 0
rm -f -- "$tmp"
exit 1
"""
# tail -F until our side goes away: closing the channel does not stop a remote command that never writes
# (an idle log), so the wrapper waits for stdin to close (our EOF, or sshd closing it when the link drops)
# and then stops tail itself.
TAIL_CHUNK = 1 << 18  # bytes per read of a remote tail
# The tail channel's receive window (asyncssh's default is 2 MiB). Under a flood the window stays full, and all of
# it is ahead, in the one TCP stream, of any other channel's answer (router events, commands, GET /models): the
# window bounds that wait. 1 MiB still lets ~3 MB/s through a 300 ms round trip (a 20,000 lines/s log is ~1.6).
TAIL_WINDOW = 1 << 20
TAIL_SCRIPT = 'tail -n "$1" -F -- "$2" 2>/dev/null & t=$!; cat >/dev/null; kill "$t" 2>/dev/null; exit 0'
