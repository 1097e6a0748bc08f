"""The remote half of the ssh agent (ssh/remote_shell.py): one POSIX `sh` started once per connection that runs the
commands llamaherd would otherwise open one ssh session each for.

Protocol (all text lines on the agent's stdin/stdout):
- request: `R <id> <n>` then the n lines of a shell command (as an ssh exec request would carry it);
  kill: `K <id>` stops a request still running (its whole process tree), used when the caller timed out.
- answer: `@@llamaherd-agent <id> <rc> <out> <err> <out_total> <err_total>` then exactly <out> bytes of stdout
  and <err> bytes of stderr; <out>/<err> are cut at OUTPUT_LIMIT, the totals say what the command wrote.
- at start: `@@llamaherd-agent ready <pid>`, then the answer to request 0, which nobody sent: the login's $HOME
  and $XDG_STATE_HOME (ENV_SCRIPT), which every command needs first; so reading them costs no round trip.
  The agent's own arguments are requests 1..n, run at start the same way (what a command asked for before
  connecting: Transport.ask_early); they too cost no round trip of their own.
Each request runs in the background (several in flight; a slow one blocks nobody); its output goes to files in
a private 0700 directory and one emitter loop sends finished answers one at a time, so answers never interleave.
No umask is set: the commands (and a router they start) get the login's own, as on a session of their own;
mktemp -d makes the directory 0700 either way. Nothing here is built from outside values: the commands arrive as
data and are run by `eval` in a subshell, as sshd would hand them to a shell; each is one simple command (an argv
joined by shlex), never a bare `exit` or `exec`, which would end the job before it reports. A job gets no copy of the
agent's pipes (stdin /dev/null, fd 3 closed), so a process it leaves running (a router started detached) holds
nothing of the agent's.
A stopped request leaves its files (the emitter may be sending its answer right then) until the agent ends;
answered ones are removed 16 at a time (one `rm` for many: each process counts on a host followed all day).
When stdin ends (our side closed the channel, or sshd did when the link dropped) the agent stops the requests
still running and removes its directory; the directory of an agent killed outright (no trap runs) is removed
by the next agent of that user, which finds its pid gone.
"""

from __future__ import annotations

import shlex

from app.services.core.bounded import MAX_COMMAND_OUTPUT
from app.services.hosts.shell_scripts import ENV_SCRIPT

MARK = "@@llamaherd-agent"
OUTPUT_LIMIT = MAX_COMMAND_OUTPUT

AGENT_SCRIPT = f"""for o in "${{TMPDIR:-/tmp}}"/llamaherd-agent.*/pid; do
  [ -O "$o" ] && IFS= read -r p <"$o" && ! kill -0 "$p" 2>/dev/null && rm -rf "${{o%/pid}}"
done 2>/dev/null
d=$(mktemp -d "${{TMPDIR:-/tmp}}/llamaherd-agent.XXXXXX") || exit 1
echo "$$" >"$d/pid"
mkfifo "$d/done" || {{ rm -rf "$d"; exit 1; }}
tree() {{
  all=" $1 "; grew=1
  while [ "$grew" = 1 ]; do
    grew=0
    for s in /proc/[0-9]*/stat; do
      IFS= read -r l 2>/dev/null <"$s" || continue
      p=${{s#/proc/}}; p=${{p%/stat}}
      case $all in *" $p "*) continue ;; esac
      set -- ${{l##*) }}
      case $all in *" $2 "*) all="$all$p "; grew=1 ;; esac
    done
  done
  echo $all
}}
stop() {{
  [ -e "$d/$1.o" ] && [ ! -e "$d/$1.r" ] && IFS= read -r p <"$d/$1.p" 2>/dev/null && kill $(tree "$p") 2>/dev/null
}}
quit() {{
  for f in "$d"/*.o; do [ -e "$f" ] || continue; f=${{f##*/}}; stop "${{f%.o}}"; done 2>/dev/null
  rm -rf "$d"
}}
(
  trap '' PIPE
  cd "$d" || exit 1
  old=; k=0
  while IFS= read -r id; do
    rc=255; read -r rc <"$id.r"
    set -- $(wc -c "$id.o" "$id.e") && o=$1 && e=$3 || exit 1
    so=$((o > {OUTPUT_LIMIT} ? {OUTPUT_LIMIT} : o)); se=$((e > {OUTPUT_LIMIT} ? {OUTPUT_LIMIT} : e))
    printf '{MARK} %s %s %s %s %s %s\\n' "$id" "$rc" $so $se $o $e || exit 1
    if [ "$so" = "$o" ] && [ "$se" = "$e" ]; then
      cat "$id.o" "$id.e" || exit 1
    else
      head -c {OUTPUT_LIMIT} "$id.o" && head -c {OUTPUT_LIMIT} "$id.e" || exit 1
    fi
    old="$old $id.o $id.e $id.r $id.p"; k=$((k + 1))
    if [ "$k" -ge 16 ]; then rm -f $old; old=; k=0; fi
  done <done
) &
exec 3>"$d/done"
trap quit EXIT
trap 'exit 1' HUP INT TERM
job() {{
  : >"$d/$1.o"
  ( eval "$2" </dev/null >"$d/$1.o" 2>"$d/$1.e" 3>&-; echo "$?" >"$d/$1.r"; echo "$1" >&3 ) &
  echo "$!" >"$d/$1.p"
  [ -e "$d/$1.o" ] || rm -f "$d/$1.p"
}}
echo "{MARK} ready $$"
job 0 {shlex.quote(ENV_SCRIPT)}
n=0
for c in "$@"; do n=$((n + 1)); job "$n" "$c"; done
while IFS= read -r h; do
  set -- $h
  case $1 in
    K) stop "$2" ;;
    R)
      id=$2; n=$3; c=
      while [ "$n" -gt 0 ]; do
        IFS= read -r l || exit 0
        c="$c$l
"
        n=$((n - 1))
      done
      job "$id" "$c"
      ;;
  esac
done
"""
