"""The keys an operator may rebind under [keymap]: every binding id, its default keys, and the scope it is live in.

Here, below config and beside errors, because config.py checks a [keymap] at load (an unknown id, a clash) and must
not import the UI that defines the bindings; a test holds the UI's bindings and this table to each other.
"""

from __future__ import annotations

import re

DEFAULT_KEYS: dict[str, dict[str, str]] = {
    # The dashboard screen and every pane on it: a key on a focused pane shadows the screen's, so they clash.
    "dashboard": {
        "load": "l",
        "unload": "u",
        "reload": "r",
        "start_router": "s",
        "stop_router": "x",
        "edit_preset": "e",
        "edit_global_preset": "E",
        "model_files": "m",
        "ask": "a",
        "hub": "d",
        "remove_model": "D",
        "goto_log": "g",
        "toggle_fleet": "f",
        "history": "h",
        "filter": "slash",
        "help": "question_mark",
        "quit": "q",
        "command": "colon",
        "retry_machine": "R",
        "add_machine": "plus",
        "machines_compact": "c",
        "machines_problems_first": "exclamation_mark",
        "model_detail": "i",
        **{f"machine_{n}": str(n) for n in range(1, 10)},
        "log_follow": "p",
        "log_level": "w",
        "log_wrap": "W",
        "log_model": "M",
        "log_search": "slash",
        "log_find_next": "n",
        "log_find_prev": "N",
        "log_filter": "ampersand",
        "log_copy": "y",
        "log_copy_all": "Y",
        "log_clear_filter": "escape",
        "machine_prev": "up,k",
        "machine_next": "down,j",
        "prompt_cancel": "escape",
        "prompt_complete": "tab",
        "sort": "o",
        "sort_reverse": "O",
        "table_clear_filter": "escape",
        "mark": "space",
    },
    "history": {"history_close": "escape,h", "history_filter": "slash", "history_refresh": "ctrl+r"},
    "model_files": {
        "model_files_add": "a",
        "model_files_add_as": "n",
        "model_files_rescan": "r",
        "model_files_write": "enter",
        "model_files_close": "escape",
        "model_files_back": "escape",
    },
    "preset_form": {
        "preset_save": "ctrl+s",
        "preset_write": "ctrl+s,enter",
        "preset_cancel": "escape",
        "preset_back": "escape",
        "preset_add_key": "ctrl+n",
        "preset_remove_key": "ctrl+r",
        "preset_reload": "r",
    },
    "confirm": {"confirm_yes": "y", "confirm_no": "n,escape"},
    "help": {"help_close": "escape,q,question_mark"},
    "ask": {"ask_stop": "escape", "ask_attach": "ctrl+o"},
    "hub": {"hub_close": "escape", "hub_search": "slash"},
    "image_picker": {"image_cancel": "escape"},
    "add_machine": {"add_machine_save": "ctrl+s", "add_machine_cancel": "escape"},
    "model_detail": {"detail_close": "escape,i"},
}
"""scope -> binding id -> its keys, as the UI binds them (comma-separated)."""

BINDING_IDS: frozenset[str] = frozenset(i for scope in DEFAULT_KEYS.values() for i in scope)

# Textual's key names ("ctrl+s", "question_mark", "f5", "L") or one printable character ("?"), which it normalizes.
_KEY_NAME = re.compile(r"^[A-Za-z0-9_]+(\+[A-Za-z0-9_]+)*$")
# Textual's own short forms for the characters a key name would otherwise be (App._normalize_keymap does the same).
_CHAR_NAMES = {"?": "question_mark", "/": "slash", "\\": "backslash", "+": "plus", "-": "minus", ",": "comma"}


def split_keys(keys: str) -> list[str]:
    """The keys of a binding's comma-separated list, normalized so that "?" and "question_mark" compare equal."""
    return [_CHAR_NAMES.get(k.strip(), k.strip()) for k in keys.split(",")]


def bad_key(keys: str) -> str | None:
    """Why a [keymap] value is not a key list, or None when it is one."""
    if not keys.strip():
        return "is empty"
    for key in (k.strip() for k in keys.split(",")):
        if not key:
            return "has an empty key between commas"
        if not (_KEY_NAME.match(key) or (len(key) == 1 and key.isprintable() and not key.isspace())):
            return f"has {key!r}, which is not a key name (e.g. l, L, ctrl+r, f5, question_mark)"
    return None


def clashes(keymap: dict[str, str]) -> list[tuple[str, str, str]]:
    """(remapped id, other id, key) for every key a [keymap] puts on two bindings live at once that the defaults
    kept apart: `unload = "l"` takes `l` from load. Defaults that share a key on purpose (escape closing or going
    back, depending on the step) are not clashes."""
    found: list[tuple[str, str, str]] = []
    for defaults in DEFAULT_KEYS.values():
        now = {i: split_keys(keymap.get(i, k)) for i, k in defaults.items()}
        before = {i: split_keys(k) for i, k in defaults.items()}
        for bid in (i for i in defaults if i in keymap):
            for key in now[bid]:
                for other, keys in now.items():
                    shared_before = key in before[bid] and key in before[other]
                    said = any(f[:2] == (other, bid) for f in found)
                    if other != bid and key in keys and not shared_before and not said:
                        found.append((bid, other, key))
    return found
