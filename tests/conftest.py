"""Shared fixtures: the real llama-server binary, tiny GGUF models, routers on free loopback ports."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from app.services.binary import HOW_TO_GET, find_llama_server
from app.tinymodels import TinySpec, write_corrupt_model, write_tiny_model
from tests.helpers.router import RouterProc, preset_text

# One sshd (and one without SFTP) for the whole session, shared by every module that asks for them.
pytest_plugins = ["tests.sshd"]

IN_CI = bool(os.environ.get("CI"))


def need(what: str, ok: bool) -> None:
    """Skip with the reason on a developer machine; in CI a missing component is a failure."""
    if ok:
        return
    if IN_CI:
        pytest.fail(f"{what} is required in CI")
    pytest.skip(f"{what} is not installed here")


@pytest.fixture(scope="session")
def llama_server() -> str:
    path = find_llama_server()
    need("llama-server (" + HOW_TO_GET.splitlines()[0] + ")", path is not None)
    assert path is not None
    return path


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("models")
    return {
        "alpha": write_tiny_model(d / "alpha.gguf", TinySpec(name="alpha", seed=1)),
        "beta": write_tiny_model(d / "beta.gguf", TinySpec(name="beta", n_layers=3, context_length=512, seed=2)),
        "broken": write_corrupt_model(d / "broken.gguf"),
    }


RouterFactory = Callable[..., RouterProc]


@pytest.fixture
def make_router(llama_server: str, tiny_models: dict[str, Path], tmp_path: Path) -> Iterator[RouterFactory]:
    started: list[RouterProc] = []

    def factory(
        models_max: int = 1,
        extra_args: list[str] | None = None,
        env: dict[str, str] | None = None,
        models: dict[str, Path | str] | None = None,
        start: bool = True,
    ) -> RouterProc:
        n = len(started)
        preset = tmp_path / f"models{n}.ini"
        preset.write_text(preset_text(dict(models if models is not None else tiny_models)))
        r = RouterProc(
            binary=llama_server,
            preset=preset,
            log=tmp_path / f"router{n}.log",
            models_max=models_max,
            extra_args=list(extra_args or []),
            env=env,
        )
        started.append(r)
        if start:
            r.start()
        return r

    yield factory
    for r in started:
        r.stop()


@pytest.fixture
def router(make_router: RouterFactory) -> RouterProc:
    return make_router()
