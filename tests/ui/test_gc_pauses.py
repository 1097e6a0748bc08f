"""The collector's passes kept short: what is alive once the dashboard is up is frozen out of them, once."""

from __future__ import annotations

import gc

import pytest

from app.config import Config, MachineConfig
from app.services.fleet import Fleet
from app.ui import gc_pauses
from app.ui.app import make_app


def _in_passes(obj: object) -> bool:
    return any(o is obj for o in gc.get_objects(generation=2))


def test_what_is_alive_at_start_up_leaves_the_full_passes_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gc_pauses, "_frozen", False)
    was_frozen = gc.get_freeze_count()
    held = [[i] for i in range(1000)]  # long-lived objects the collector tracks, as the app's widgets are
    gc.collect()
    assert _in_passes(held[0])
    try:
        frozen = gc_pauses.freeze_start_up()
        assert frozen >= was_frozen + len(held)
        assert not _in_passes(held[0])
        later = [[i] for i in range(10)]  # made after start-up: the collector still walks it
        gc.collect()
        assert _in_passes(later[0])
        assert gc_pauses.freeze_start_up() == frozen  # a second app in the process freezes nothing more
        assert _in_passes(later[0])
    finally:
        gc.unfreeze()


async def test_the_dashboard_freezes_its_start_up_once_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gc_pauses, "_frozen", False)
    cfg = Config(machines=(MachineConfig(name="nowhere", url="http://127.0.0.1:9"),))
    app = make_app(cfg, Fleet(cfg))
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            assert gc_pauses._frozen
            assert gc.get_freeze_count() > 10_000  # Textual and the widgets, not a handful
    finally:
        gc.unfreeze()
