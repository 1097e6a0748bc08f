"""[[plugins]]: a key on the dashboard that runs the operator's command for the selected model, against a real
router through the real Fleet: what it acts on in its environment (never its argv), its outcome in one line; and a
plugin key that a built-in binding has is refused when the config is read, naming both."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.config import Config, MachineConfig, parse_config
from app.config_plugins import PluginConfig
from app.errors import ConfigError
from app.services.fleet import Fleet
from app.ui.app import make_app
from tests.helpers.router import RouterProc
from tests.helpers.screen import record_notifications
from tests.helpers.wait import wait_for

DUMP = 'env | grep ^LLAMAHERD_ | sort > "$0"; echo "argv: $*"; echo done'


async def test_a_plugin_runs_for_the_selected_model_with_it_in_its_environment(
    router: RouterProc, tmp_path: Path
) -> None:
    out = tmp_path / "env"
    plugin = PluginConfig(key="ctrl+t", description="dump the selection", command=("sh", "-c", DUMP, str(out)))
    cfg = Config(machines=(MachineConfig(name="box", url=router.url),), plugins=(plugin,))
    app = make_app(cfg, Fleet(cfg))
    async with app.run_test(size=(120, 40)) as pilot:
        said = record_notifications(app)
        table = app.dashboard.model_table
        await wait_for(lambda: "beta" in table.rows_now, timeout=15, pilot=pilot, what="the router's models")
        table.move_cursor(row=table.get_row_index("beta"))
        await pilot.pause()
        await pilot.press("ctrl+t")
        await wait_for(lambda: any("dump the selection: exit 0" in m for _, _, m in said), timeout=10, pilot=pilot)
        env = dict(line.split("=", 1) for line in out.read_text().splitlines())
        assert env["LLAMAHERD_MACHINE"] == "box" and env["LLAMAHERD_MODEL"] == "beta"
        assert env["LLAMAHERD_URL"] == router.url
        line = next(m for _, _, m in said if "dump the selection" in m)
        assert line == "dump the selection: exit 0: done"
        assert any(ln.raw.rstrip() == "[plugin] argv:" for ln in app.dashboard.logs.buffer)  # no argv of ours
        rows = app.dashboard.binding_rows()
        assert any(r.description == "dump the selection" for r in rows)  # listed in help


def test_a_plugin_key_a_binding_has_is_refused_naming_both() -> None:
    body = '[[plugins]]\nkey = "l"\ndescription = "mine"\ncommand = ["true"]\n'
    with pytest.raises(ConfigError) as e:
        parse_config(body, Path("/c.toml"))
    assert str(e.value) == "/c.toml:2: key 'key': 'l' is already the dashboard's 'load'"
    moved = parse_config('[keymap]\nload = "L"\n\n' + body, Path("/c.toml"))  # load moved away: `l` is free
    assert moved.plugins[0].key == "l"
