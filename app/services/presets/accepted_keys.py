"""The keys a router accepts in a preset, read from its own `llama-server --help` (an unknown key makes the router
refuse the whole file, so the editor checks against what this machine's binary prints)."""

from __future__ import annotations

import re

_OPTION_RE = re.compile(r" {0,4}(-{1,2}[A-Za-z0-9][A-Za-z0-9_.-]*)")
_NEXT_OPTION_RE = re.compile(r",\s*(-{1,2}[A-Za-z0-9][A-Za-z0-9_.-]*)")
_ENV_RE = re.compile(r"\(env: ([A-Za-z_][A-Za-z0-9_]*)\)")


def known_keys_from_help(help_text: str) -> frozenset[str]:
    """Every key the router accepts in a preset, read from `llama-server --help`: each spelling of each option
    without its dashes, each env name, and the LLAMA_ARG_NO_* env form of options that have a `--no-` spelling.
    The preset-only keys are not in the help: `validate_key` adds them."""
    keys: set[str] = set()
    spellings: list[str] = []
    for line in help_text.splitlines():
        if m := _OPTION_RE.match(line):
            spellings = [m.group(1).lstrip("-")]
            pos = m.end()
            while n := _NEXT_OPTION_RE.match(line, pos):
                spellings.append(n.group(1).lstrip("-"))
                pos = n.end()
            keys.update(spellings)
        for env in _ENV_RE.findall(line):
            keys.add(env)
            if _has_negative(spellings) and env.startswith("LLAMA_ARG_"):
                keys.add("LLAMA_ARG_NO_" + env.removeprefix("LLAMA_ARG_"))
    return frozenset(keys)


def _has_negative(spellings: list[str]) -> bool:
    """An option printed with both a positive and a `no-` spelling (a bool flag with a negative form)."""
    negative = any(s.startswith("no") for s in spellings)
    positive = any(not s.startswith("no") for s in spellings)
    return negative and positive
