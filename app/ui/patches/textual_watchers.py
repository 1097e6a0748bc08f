"""A bound Textual does not keep: watchers left behind by removed widgets.

`data_bind` registers a watcher on the bound object (the Footer's `compact`). Textual drops the watchers of closed
widgets only when that reactive changes again, and the Footer's never does; each footer rebuild (a key becoming
available or not: every load and unload) left its ~10 FooterKey widgets alive for good, ~27 widgets a router
cycle. Pruned here after each rebuild, so at most one generation of dead keys is ever held.
"""

from __future__ import annotations

from textual.dom import DOMNode


def prune_closed_watchers(obj: DOMNode) -> int:
    """Drop the watchers of `obj`'s reactives whose widget has closed; returns how many were dropped."""
    watchers: dict[str, list[tuple[DOMNode, object]]] | None = getattr(obj, "__watchers", None)
    if not watchers:
        return 0
    dropped = 0
    for entries in watchers.values():
        alive = [(node, cb) for node, cb in entries if not (node._closing or node._closed)]
        dropped += len(entries) - len(alive)
        entries[:] = alive
    return dropped
