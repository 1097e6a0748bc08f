"""`preset set` with an hf-token: written as asked, with a warning that the router will put it on the model's
command line (tests/integration/test_ssh_secrets_argv.py sees it there), naming the config key that does not."""

from __future__ import annotations

from app.services.presets.secret_keys import exposed_by_argv
from tests.helpers.herd import Herd


def test_each_spelling_of_the_token_is_named_and_nothing_else() -> None:
    said = exposed_by_argv(["ctx-size", "hf-token", "--hft", "HF_TOKEN", "jinja"])
    assert [line.split(":")[0] for line in said] == ["hf-token", "--hft", "HF_TOKEN"]
    assert all("hub_token_env" in line and "ps" in line for line in said)


def test_preset_set_warns_and_still_writes(herd: Herd) -> None:
    r = herd.run("preset", "set", "here", "alpha", "hf-token=hf_NotRealButSecret", "ctx-size=512")
    assert r.returncode == 0, r.stderr
    assert "warning: hf-token: the router passes it to the model's process as an argument" in r.stderr
    assert "hub_token_env" in r.stderr and "hf_NotRealButSecret" not in r.stderr  # the key is named, not its value
    assert "hf-token = hf_NotRealButSecret" in (herd.root / "models.ini").read_text()
    quiet = herd.run("preset", "set", "here", "alpha", "ctx-size=256")
    assert quiet.returncode == 0 and "warning" not in quiet.stderr
