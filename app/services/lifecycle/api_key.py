"""The API key of a router llamaherd starts: made once, kept on the serving machine beside the router's record.

Only the operators of that machine can read it (0600 in a 0700 directory). It reaches llama-server through its
environment (LLAMA_API_KEY, which the spawn script reads from the key file), never its argv: argv is world-readable
in `ps`, a process's environment is not. The router's children inherit that environment, so a child's own port
refuses an unauthenticated request as well. Every llamaherd that adopts the router reads the file over the same
transport; the key is never printed (except by `llamaherd key`), logged, or written to the local config.

One cost of keying the children: the router's own calls to a child for resumable streams (POST
/v1/streams/lookup, DELETE /v1/stream in llama-server's server-models.cpp) carry no Authorization header, so with
a keyed child they are refused. Proxied requests are not affected: the router forwards the client's header.
"""

from __future__ import annotations

import re
import secrets

from app.services.core.errors import LifecycleError

KEY_FILE = "api.key"
KEY_ENV = "LLAMA_API_KEY"
# llama-server splits LLAMA_API_KEY on commas (several keys); a blank or a control character would not survive
# an HTTP header either. token_urlsafe keys never contain any of them.
_USABLE = re.compile(r"[\x21-\x2b\x2d-\x7e]{16,512}\Z")
KEY_RULE = "16 to 512 printable ASCII characters without spaces or commas"


def new_key() -> str:
    return secrets.token_urlsafe(32)


def usable(key: str) -> bool:
    return bool(_USABLE.match(key))


def parse_key_file(data: bytes) -> str | None:
    """The key in a key file: its first line that is neither blank nor a comment (as --api-key-file reads it)."""
    for line in data.decode("utf-8", errors="replace").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            return line
    return None


def key_from_env(machine: str, env_name: str, value: str | None) -> str:
    """The key named by a machine's api_key_env, checked; the refusal never contains the value."""
    if not value:
        raise LifecycleError(
            f"{machine}: api_key_env names ${env_name}, which is not set here; set it, or remove api_key_env "
            "from the machine so llamaherd makes a key of its own"
        )
    if not usable(value):
        raise LifecycleError(f"{machine}: the key in ${env_name} is not usable as an API key ({KEY_RULE})")
    return value


def redact(text: str, key: str | None) -> str:
    """`text` with the key hidden: for anything shown that might echo it back (error messages, log lines)."""
    return text.replace(key, "<API key>") if key else text
