"""Comparing two versions of a preset: which sections a reload restarts, and the diff an operator reads before a
write. Pure, like `presets`."""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from app.services.presets.ini_text import GLOBAL_SECTION, PresetDoc, split_lines

# Keys the router drops before comparing a running model's options with the reloaded ones (reference §4.7,
# `preset_options_for_compare`): changing them never restarts a model. Every spelling of those options counts.
RELOAD_IGNORED_KEYS = frozenset(
    {
        "host",
        "LLAMA_ARG_HOST",
        "port",
        "LLAMA_ARG_PORT",
        "alias",
        "a",
        "LLAMA_ARG_ALIAS",
        "log-colors",
        "LLAMA_ARG_LOG_COLORS",
        "version",  # skipped by the parser in every section ("reserved for future use")
    }
)


# ---- what a reload restarts ----


def _compared(keys: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in keys.items() if k not in RELOAD_IGNORED_KEYS}


def changed_sections(old: PresetDoc, new: PresetDoc) -> set[str]:
    """The sections whose model a reload would restart (if it is running): removed sections, and sections whose
    options changed, ignoring `host`, `port`, `alias`, `log-colors` (and `version`), as the router does.
    `tags`, `load-on-startup` and `stop-timeout` do count: the router compares them too.

    `[*]` is cascaded under every model, so each model section is compared with `[*]` merged below it: a
    change in `[*]` reports every model section it reaches (not one that sets the same key itself). When `[*]`
    itself changed, `*` is in the result too: models that come from the cache or a models directory, which have
    no section here, are restarted by it as well, and only the caller knows which of those are running.

    Keys are compared by spelling: `c = 8192` replaced by `ctx-size = 8192` counts as a change here, though the
    router sees the same option (it over-reports, never under-reports).
    """
    old_eff, new_eff = old.sections(), new.sections()
    old_global = _compared(old_eff.get(GLOBAL_SECTION, {}))
    new_global = _compared(new_eff.get(GLOBAL_SECTION, {}))
    changed: set[str] = set()
    if old_global != new_global:
        changed.add(GLOBAL_SECTION)
    for name, keys in old_eff.items():
        if name == GLOBAL_SECTION:
            continue
        if name not in new_eff:
            changed.add(name)
            continue
        before = {**old_global, **_compared(keys)}
        after = {**new_global, **_compared(new_eff[name])}
        if before != after:
            changed.add(name)
    return changed


# ---- showing a change ----


def unified_diff(old_text: str, new_text: str, path: str, labels: tuple[str, str] = ("current", "new")) -> str:
    """A unified diff of two versions of the file, for an operator to read before it is written; `labels` name
    the two sides in its header."""
    old_lines = [body + eol for body, eol in split_lines(old_text)]
    new_lines = [body + eol for body, eol in split_lines(new_text)]
    out: list[str] = []
    diff = difflib.unified_diff(old_lines, new_lines, fromfile=f"{path} ({labels[0]})", tofile=f"{path} ({labels[1]})")
    for number, line in enumerate(diff):
        body = line.rstrip("\r\n")
        out.append(body)
        is_content = number >= 2 and not line.startswith("@@")
        if is_content and body == line:
            out.append("\\ No newline at end of file")
    return "\n".join(out) + "\n" if out else ""
