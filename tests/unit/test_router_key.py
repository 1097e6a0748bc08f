"""The API key's rules: made random, read from a key file, checked when it comes from the environment, and
handed to the spawn script only as a file name (issue 10)."""

from __future__ import annotations

import pytest

from app.services.core.errors import LifecycleError
from app.services.hosts.transport import spawn_args
from app.services.lifecycle.api_key import key_from_env, new_key, parse_key_file, usable


def test_new_keys_are_random_and_usable() -> None:
    keys = {new_key() for _ in range(50)}
    assert len(keys) == 50
    assert all(usable(k) and len(k) >= 40 for k in keys)


def test_key_file_first_real_line() -> None:
    assert parse_key_file(b"# made by llamaherd\n\n  abc-def_0123456789xyz \nsecond\n") == "abc-def_0123456789xyz"
    assert parse_key_file(b"") is None
    assert parse_key_file(b"# only a comment\n") is None


BAD_KEYS = ["", "short", "has space in it here", "two,keys-xxxxxxxxxxxx", "ctl\x01xxxxxxxxxxxxxxxx"]


@pytest.mark.parametrize("bad", BAD_KEYS)
def test_a_key_from_the_environment_is_checked_and_never_echoed(bad: str) -> None:
    with pytest.raises(LifecycleError) as e:
        key_from_env("gpu-box", "SHARED_KEY", bad)
    assert "SHARED_KEY" in str(e.value) and "gpu-box" in str(e.value)
    if bad:
        assert bad not in str(e.value)


def test_a_good_key_from_the_environment_is_used_as_it_is() -> None:
    assert key_from_env("gpu-box", "SHARED_KEY", "Zx9-shared_key.2024!") == "Zx9-shared_key.2024!"


def test_spawn_args_name_the_key_file_never_the_key() -> None:
    files = {"LLAMA_API_KEY": "/s/api.key"}
    argv = spawn_args(["llama-server", "--port", "1"], "/s/router.log", {"A": "1"}, None, files)
    i = argv.index("--")
    assert argv[i - 3 : i] == ["A=1", "LLAMA_API_KEY", "/s/api.key"]
    assert argv[i + 1 :] == ["llama-server", "--port", "1"]
    with pytest.raises(ValueError):
        spawn_args(["x"], "/l", None, None, {"BAD NAME": "/k"})
