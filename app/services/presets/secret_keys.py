"""Preset keys whose value is a secret that the router hands to a model's process as a command-line argument.

The router starts each model's process with that model's preset options as arguments (seen in `ps` on the serving
machine: `--hf-token hf_…`, tests/integration/test_ssh_secrets_argv.py), so such a value is readable by every user
there for as long as the model runs. llamaherd still writes what the operator asked for, and says so, naming the
config key that keeps the secret out of any command line.
"""

from __future__ import annotations

from collections.abc import Iterable

SECRET_KEYS: dict[str, str] = {
    "hf-token": "hub_token_env",
    "hft": "hub_token_env",
}
"""Key (any spelling llama-server takes in a preset) -> the machine's config key that passes it privately."""


def exposed_by_argv(keys: Iterable[str]) -> list[str]:
    """One line per key among `keys` whose value the router would put on a model's command line."""
    out = []
    for key in keys:
        bare = key.strip().lstrip("-").lower().replace("_", "-")
        instead = SECRET_KEYS.get(bare)
        if instead is not None:
            out.append(
                f"{key}: the router passes it to the model's process as an argument, which every user on that machine "
                f"can read with ps while the model runs; `{instead}` in the machine's config keeps it out of argv"
            )
    return out
