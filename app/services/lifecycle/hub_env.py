"""What a router llamaherd starts is given for downloads: the machine's hub, its token and its cache folder.

The router's download child (POST /models, reference §2.7) inherits only the router's environment, not its
command line: it takes its hub from MODEL_ENDPOINT, its token from HF_TOKEN and its cache from LLAMA_CACHE. The
token is a secret, so it travels like the API key (lifecycle/api_key.py): written to a 0600 file beside the
record on the serving machine and read into the environment by the spawn script, never in any argv (`ps` shows
argv to every user there), never printed. The hub and cache are not secrets and go as plain variables.

What was applied is kept in the router's record (`hub`), so a router adopted later, started by hand or by an
older llamaherd, can be told apart from one that follows the machine's settings.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from app.config import MachineConfig
from app.services.core.errors import LifecycleError
from app.services.hosts.shell_scripts import WRITE_SCRIPT

DEFAULT_HUB = "https://huggingface.co"
TOKEN_FILE = "hub.token"
TOKEN_ENV = "HF_TOKEN"
ENDPOINT_ENV = "MODEL_ENDPOINT"
CACHE_ENV = "LLAMA_CACHE"
# Bound: a hub token is a few dozen characters; anything this long is not one.
MAX_TOKEN = 4096


@dataclass(frozen=True)
class HubEnv:
    """The plain variables for the spawn, the token to write to the token file (None: no token), and the summary
    kept in the record (the token only as "set": never its value)."""

    env: dict[str, str]
    token: str | None
    applied: str


def token_write_argv(path: str) -> list[str]:
    """The token file written 0600 (mktemp, then rename) with its contents read from stdin, never from argv."""
    return ["sh", "-c", WRITE_SCRIPT, "sh", path, "600"]


def token_stdin(token: str) -> bytes:
    return base64.b64encode((token + "\n").encode())


def applied_summary(endpoint: str, cache: str, token: bool) -> str:
    """One comparable line for the record: what the router was started with."""
    return f"hub={endpoint or DEFAULT_HUB} cache={cache or '-'} token={'set' if token else '-'}"


def hub_env(machine: MachineConfig, token_value: str | None, cache: str | None) -> HubEnv:
    """The environment for a start of `machine`'s router; `token_value` is the value of its hub_token_env here,
    `cache` its hub_cache as expanded on the serving machine."""
    env: dict[str, str] = {}
    endpoint = machine.hub.rstrip("/")
    if endpoint and endpoint != DEFAULT_HUB:
        env[ENDPOINT_ENV] = endpoint
    if cache:
        env[CACHE_ENV] = cache
    token: str | None = None
    if machine.hub_token_env:
        if not token_value:
            raise LifecycleError(
                f"{machine.name}: hub_token_env names ${machine.hub_token_env}, which is not set here; set it, or "
                "remove hub_token_env from the machine"
            )
        token = token_value.strip()
        if not token or len(token) > MAX_TOKEN or any(not (0x21 <= ord(c) <= 0x7E) for c in token):
            raise LifecycleError(f"{machine.name}: the value of ${machine.hub_token_env} is not a usable hub token")
    applied = applied_summary(endpoint if endpoint != DEFAULT_HUB else "", cache or "", token is not None)
    return HubEnv(env, token, applied)


def hub_difference(machine: MachineConfig, recorded: str | None, cache: str | None) -> str:
    """ "" when the running router was started with what the machine's settings give now, else one line saying
    what differs (`recorded`: the record's summary, None for a router started without llamaherd's hub settings)."""
    endpoint = machine.hub.rstrip("/")
    wanted = applied_summary(endpoint if endpoint != DEFAULT_HUB else "", cache or "", bool(machine.hub_token_env))
    if recorded == wanted:
        return ""
    if recorded is None:
        if wanted == applied_summary("", "", False):
            return ""  # nothing asked, nothing applied: the router's defaults are the settings
        return (
            f"the router on {machine.name} was not started with its hub settings ({wanted}); restart it "
            f"(`llamaherd stop {machine.name}` then `llamaherd start {machine.name}`) to apply them"
        )
    return (
        f"the router on {machine.name} was started with {recorded}, the settings now say {wanted}; restart it "
        "to apply them"
    )
