"""The real `python -m app` in a real tmux (as over ssh), against a real router: keys in, `capture-pane` out.

TERM=screen-256color as tmux gives it; a non-UTF-8 locale turns the whole screen ASCII.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from tests.helpers.router import RouterProc
from tests.helpers.tmux import Tmux


def dashboard(tmux: Tmux, router: RouterProc, tmp_path: Path, lang: str) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'[[machines]]\nname = "box"\nurl = "{router.url}"\n')
    env = {"TERM": "screen-256color", "LANG": lang, "LC_ALL": "", "LC_CTYPE": "", "XDG_STATE_HOME": str(tmp_path)}
    tmux.start(f"{shlex.quote(sys.executable)} -m app --config {shlex.quote(str(cfg))}", env)


def row(screen: str, model: str) -> str:
    return next((ln for ln in screen.splitlines() if f" {model} " in ln and "│ model" not in ln), "")


def test_dashboard_in_tmux_loads_unloads_helps_and_quits(tmux: Tmux, router: RouterProc, tmp_path: Path) -> None:
    dashboard(tmux, router, tmp_path, "C.UTF-8")
    tmux.wait(lambda s: "unloaded" in row(s, "alpha") and "attached" in s)
    tmux.keys("l")
    tmux.wait(lambda s: "● loaded" in row(s, "alpha"))
    tmux.keys("u")
    tmux.wait(lambda s: "unloaded" in row(s, "alpha"))
    tmux.keys("?")
    # all three: under load a capture can catch the help screen half drawn
    tmux.wait(lambda s: all(k in s for k in ("start_router", "stop_router", "toggle_fleet")))
    tmux.keys("Escape")
    tmux.wait(lambda s: "start_router" not in s)
    tmux.keys("f")
    tmux.wait(lambda s: "fleet: every model" in s)
    tmux.keys("q")
    tmux.wait_gone(10)
    assert not tmux.alive(), "q did not quit the dashboard"
    assert router.proc is not None and router.proc.poll() is None  # the router outlives the dashboard


def test_non_utf8_locale_draws_ascii_only(tmux: Tmux, router: RouterProc, tmp_path: Path) -> None:
    dashboard(tmux, router, tmp_path, "C")
    screen = tmux.wait(lambda s: "unloaded" in row(s.replace("|", "│"), "alpha") and "attached" in s)
    assert "+- machines" in screen
    assert not {c for c in screen if ord(c) > 127}, screen


def test_a_foreground_plugin_gets_the_terminal_then_gives_the_dashboard_back(
    tmux: Tmux, router: RouterProc, tmp_path: Path
) -> None:
    """`background = false`: the dashboard steps aside (App.suspend), the command reads and writes the terminal
    itself with the selection in its environment, and when it ends the dashboard is drawn again and says how it
    went."""
    answer = tmp_path / "answer.txt"
    script = (
        f'printf "PLUGIN-ASKS %s/%s: " "$LLAMAHERD_MACHINE" "$LLAMAHERD_MODEL"; read -r x; printf %s "$x" > {answer}'
    )
    cfg = tmp_path / "config.toml"
    cfg.write_text(
        f'[[machines]]\nname = "box"\nurl = "{router.url}"\n\n'
        f'[[plugins]]\nkey = "ctrl+t"\ndescription = "ask me"\nscope = "model"\nbackground = false\n'
        f"command = {json.dumps(['sh', '-c', script])}\n"  # a JSON array of strings is TOML too
    )
    env = {"TERM": "screen-256color", "LANG": "C.UTF-8", "XDG_STATE_HOME": str(tmp_path)}
    tmux.start(f"{shlex.quote(sys.executable)} -m app --config {shlex.quote(str(cfg))}", env)
    tmux.wait(lambda s: "unloaded" in row(s, "alpha") and "attached" in s)
    tmux.keys("C-t")
    screen = tmux.wait(lambda s: "PLUGIN-ASKS box/alpha:" in s)
    assert "models" not in screen  # the dashboard is off the screen while the command has it
    tmux.keys("typed at the plugin", "Enter")
    tmux.wait(lambda s: "ask me" in s and "alpha" in row(s, "alpha"))  # back, with the outcome toast
    assert answer.read_text() == "typed at the plugin"
    tmux.keys("q")
    tmux.wait_gone(10)
