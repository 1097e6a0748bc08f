"""Which router a history row belongs to: its identity on its machine, not the name a config gives the machine.

Two configs may name one router differently (`workstation` here, `ws` there), and two routers may carry one name
(the demo's `workstation` and an operator's): a row is kept under the router's scope and read back under whatever
name the reading config gives that scope, so neither mixes nor loses rows. The scope is the machine as the config
reaches it (this machine, or the ssh destination as written) and, on it, the router's key (its record's directory)
or, for a router somebody else runs, its URL.
"""

from __future__ import annotations

from collections.abc import Iterable

from app.config import MachineConfig

UNSCOPED = ""
"""The scope of a row recorded before rows had one: read only by `llamaherd history --all` (every row as recorded)."""


def router_scope(cfg: MachineConfig) -> str:
    if cfg.is_local:
        where = "local"
    else:
        user = f"{cfg.user}@" if cfg.user else ""
        port = f":{cfg.port}" if cfg.port not in (None, 22) else ""
        where = f"ssh:{user}{cfg.host}{port}"
    if cfg.url is not None:
        return f"{where}/url:{cfg.url.rstrip('/')}"
    return f"{where}/router:{cfg.router}"


def scope_names(machines: Iterable[MachineConfig]) -> dict[str, str]:
    """Scope -> the machine name this config gives it (what a store reading for this config shows)."""
    return {router_scope(m): m.name for m in machines}
