"""A request's stdin carried inside the request itself, as a here-document, so that data meant for stdin (a key, a
file's contents) reaches the far side in the one round trip of the remote shell (ssh/remote_shell.py) and never as
an argument.

Why not an argument: every argument of a remote command is in its `/proc/PID/cmdline`, which `ps` shows to every
user of the serving machine while the command runs; a 0600 key file written that way would be readable by all of
them for that moment. The remote shell reads its requests from its own stdin and runs them with `eval`, so text in a
here-document is in no process's argv. (A command sent as an ssh session of its own is in the argv of the login
shell that sshd starts for it, so there stdin goes as the session's stdin instead: ssh/transport.py.)

Only plain data can be carried this way: printable ASCII lines (base64 is), ending with a newline, none of them the
end marker. Anything else goes as a session's stdin.
"""

from __future__ import annotations

END = "@@llamaherd-stdin"
# The remote shell reads a request byte by byte (its `read`); past this, a session's stdin is cheaper.
LIMIT = 64 * 1024


def here_document(data: bytes) -> str | None:
    """The redirection to append to a simple command so it reads `data` on stdin; None when `data` cannot be one."""
    if len(data) > LIMIT or not data.endswith(b"\n"):
        return None
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        return None
    lines = text[:-1].split("\n")
    if any(line == END or not line.isprintable() for line in lines):
        return None
    return f" <<'{END}'\n{text}{END}"
