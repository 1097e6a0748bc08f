"""The serve token: from $LLAMAHERD_SERVE_TOKEN, or made once and kept in llamaherd's state directory on this
machine (`serve.token`, 0600 in a 0700 directory), as a router's API key is kept (lifecycle/api_key.py).

It is never put in argv (world-readable in `ps`) or in a log: `serve` prints where it is, and `serve --show-token`
prints it alone, on purpose. Read from the environment, it is taken out of the environment at once, so the
dashboard processes the server starts (one per browser session) never carry it.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from app.errors import ConfigError
from app.services.history.store import default_path as history_path
from app.services.lifecycle.api_key import KEY_RULE, new_key, parse_key_file, usable

TOKEN_ENV = "LLAMAHERD_SERVE_TOKEN"
TOKEN_FILE = "serve.token"
MAX_TOKEN_FILE = 4096  # bound: a token file is one line


def token_path() -> Path:
    """Beside the history database, in llamaherd's state directory on this machine."""
    return Path(history_path()).parent / TOKEN_FILE


def token_from_env() -> str | None:
    """$LLAMAHERD_SERVE_TOKEN, checked, and removed from this process's environment; None when unset."""
    value = os.environ.pop(TOKEN_ENV, None)
    if value is None or value == "":
        return None
    if not usable(value):
        raise ConfigError(f"${TOKEN_ENV} is not usable as a token ({KEY_RULE})")
    return value


def read_token(path: Path) -> str | None:
    """The token kept in `path`, or None when there is none (no file, or no usable line in it)."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_TOKEN_FILE)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ConfigError(f"cannot read the serve token at {path}: {e.strerror or e}") from None
    token = parse_key_file(data)
    return token if token is not None and usable(token) else None


def ensure_token(path: Path | None = None) -> str:
    """The kept token, made and written first when there is none (0600 from the start, written atomically)."""
    path = path or token_path()
    token = read_token(path)
    if token is not None:
        return token
    token = new_key()
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(token + "\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
    except OSError as e:
        raise ConfigError(f"cannot keep a serve token at {path}: {e.strerror or e}") from None
    return read_token(path) or token


def serve_token(path: Path | None = None) -> str:
    """The token this server requires: the environment's when set, else the kept one (made on first use)."""
    return token_from_env() or ensure_token(path)
