"""Shared fixtures: the real llama-server binary, tiny GGUF models, routers on free loopback ports."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from app.services.lifecycle.llama_server_binary import HOW_TO_GET, find_llama_server
from app.tinymodels import TinySpec, write_corrupt_model, write_tiny_model
from tests.helpers.herd import Herd, local_config
from tests.helpers.needs import missing, require
from tests.helpers.router import RouterProc, preset_text

# A suite started in the background by a non-interactive shell (`make test &`, nohup) has SIGINT ignored, and
# every process a test starts inherits that: the tests that stop `llamaherd events` with SIGINT, as an operator's
# Ctrl-C does, then waited on a command that could not hear it. The suite runs with Python's own handler.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# The fixtures of tests/helpers/sshd.py (one sshd, and one without SFTP, for the whole session, shared by every module
# that asks for them) and tests/helpers/tmux.py (a tmux server of the test's own).
pytest_plugins = ["tests.helpers.sshd", "tests.helpers.tmux", "tests.helpers.hub_fixtures"]

# What a test needs, as the fixtures it takes (directly or through other fixtures) tell it: a test that takes one
# of these carries the marker, so `-m "not ssh"` (and the others) really leave that component out. The markers are
# described in pyproject.toml. A test that needs one another way carries the marker itself (pytestmark, or
# pytest.param(..., marks=...) for a parameter that picks an sshd with request.getfixturevalue, or a module whose
# fixture overrides one of the same name: pytest's closure leaves out what the overridden one takes).
NEEDS: dict[str, frozenset[str]] = {
    "ssh": frozenset({"sshd", "sshd_nosftp", "any_sshd"}),
    # make_router, router, herd and every other fixture that starts a router (or the demo) take it
    "llama_server": frozenset({"llama_server"}),
    "tmux": frozenset({"tmux"}),
    "browser": frozenset({"chromium"}),
    "root": frozenset({"needs_root"}),
}


# Fixtures that take something of the machine's by a fixed name (a Unix user, a folder whose path a snapshot shows):
# under `pytest -n N --dist loadgroup` (make test) the tests that take one run on one worker, one after another. The
# preset form's snapshots on two workers once removed and rewrote each other's /tmp/llamaherd-preset-form-snapshot
# (a CI run's diff snapshot showed a file that was empty at that moment).
ONE_AT_A_TIME: dict[str, str] = {"second_user": "second-unix-user", "snap_fleet": "preset-form-snapshot-dir"}
# Modules whose tests share one costly module-scoped fixture (make screenshots, ~15 s): on one worker, it runs once.
ONE_WORKER_MODULES = frozenset({"test_screenshots.py"})


# tryfirst: pytest-xdist's worker reads the xdist_group marks in this same hook (it suffixes the node ids with the
# group); after it, the marks added here were ignored and a group's tests ran on several workers at once.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        for marker, fixtures in NEEDS.items():
            if fixtures & used:
                item.add_marker(marker)
        for fixture, group in ONE_AT_A_TIME.items():
            if fixture in used:
                item.add_marker(pytest.mark.xdist_group(group))
        if item.path.name in ONE_WORKER_MODULES:
            item.add_marker(pytest.mark.xdist_group(item.path.name))


@pytest.fixture(scope="session")
def needs_root() -> None:
    """Root, for what only root may do: make a network namespace, mount a tmpfs, add a second Unix user. Take it
    (or @pytest.mark.usefixtures("needs_root")) before doing any of these; the test then carries the `root` marker."""
    require(os.geteuid() == 0, "this test needs root (network namespaces, tmpfs mounts, a second Unix user)")


@pytest.fixture(scope="session")
def llama_server() -> str:
    path = find_llama_server()
    if path is None:
        missing("llama-server is not installed (" + HOW_TO_GET.splitlines()[0] + ")")
    return path


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("models")
    return {
        "alpha": write_tiny_model(d / "alpha.gguf", TinySpec(name="alpha", seed=1)),
        "beta": write_tiny_model(d / "beta.gguf", TinySpec(name="beta", n_layers=3, context_length=512, seed=2)),
        "broken": write_corrupt_model(d / "broken.gguf"),
    }


@pytest.fixture(autouse=True)
def dashboard_errors_fail_the_test(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Any uncaught exception in a Textual app during a test fails that test: one the app would die of, and one a
    worker ended with (which the dashboard only shows as a toast). A test that provokes one on purpose says so
    with @pytest.mark.app_errors_expected."""
    if request.node.get_closest_marker("app_errors_expected"):
        yield
        return
    from textual.app import App
    from textual.worker import Worker, WorkerState

    seen: list[str] = []
    handle = App._handle_exception
    run = Worker._run

    def record(self: App[object], error: Exception) -> None:
        seen.append(f"uncaught in {type(self).__name__}: {error!r}")
        handle(self, error)

    async def run_and_record(self: Worker[object], app: App[object]) -> None:
        await run(self, app)
        if self.state is WorkerState.ERROR:
            seen.append(f"worker {self.name!r} failed: {self.error!r}")

    monkeypatch.setattr(App, "_handle_exception", record)
    monkeypatch.setattr(Worker, "_run", run_and_record)
    yield
    if seen:
        pytest.fail("the dashboard raised during the test:\n" + "\n".join(seen), pytrace=False)


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
def herd(tmp_path: Path, tiny_models: dict[str, Path], llama_server: str) -> Iterator[Herd]:
    """The `llamaherd` command with a machine "here" serving the tiny models from tmp_path/models.ini; every
    router it started is stopped by pid at the end."""
    preset = tmp_path / "models.ini"
    preset.write_text(preset_text(dict(tiny_models)))
    h = Herd(root=tmp_path, config=tmp_path / "config.toml", extra_env={"LLAMA_SERVER": llama_server})
    h.write_config(local_config("here", preset))
    yield h
    h.stop_all()


@pytest.fixture
def router(make_router: RouterFactory) -> RouterProc:
    return make_router()
