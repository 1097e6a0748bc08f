"""The `:` commands' verbs and their usage: below the config, which checks that an alias in `[aliases]` begins with
one of them, and below the UI, whose command line (ui/dashboard/command_line.py) parses and runs them."""

from __future__ import annotations

# Every other verb (load, unload, ask, pull) takes a model, or for pull a hub repo: `VERB NAME [on MACHINE...]`.
MACHINE_VERBS = ("start", "stop", "retry", "machine")
"""Verbs that take machines only: `VERB [MACHINE...]` (machine: exactly one)."""
BARE_VERBS = ("fleet", "history", "compact", "help")

USAGE = {
    "load": "load MODEL [on MACHINE...]",
    "unload": "unload MODEL [on MACHINE...]",
    "ask": "ask MODEL [on MACHINE]",
    "pull": "pull REPO[:QUANT] [on MACHINE...]",
    "start": "start [MACHINE...]",
    "stop": "stop [MACHINE...]",
    "retry": "retry [MACHINE...]",
    "machine": "machine NAME",
    "fleet": "fleet",
    "history": "history",
    "compact": "compact",
    "help": "help",
}
VERBS = tuple(USAGE)


def verbs_begun_by(word: str) -> list[str]:
    """The verbs `word` names: itself alone when it is one, else every verb it begins (`st`: start and stop)."""
    low = word.lower()
    if low in USAGE:
        return [low]
    return [v for v in VERBS if v.startswith(low)]
