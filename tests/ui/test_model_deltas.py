"""Per-model deltas in the tables, through the stand-in fleet: a status delta (ModelsUpdated) changes its row and
repaints only that row; a list read (ModelsChanged) reconciles rows that came and went; the fleet view applies
deltas the same way."""

from __future__ import annotations

import dataclasses
from typing import Any

from app.config import Config
from app.services.core.fleet_events import ModelsChanged, ModelsUpdated
from app.services.core.router_types import ModelInfo, ModelState
from app.ui.app import HerdApp, make_app
from app.ui.dashboard.fleet_table import fleet_key
from app.ui.dashboard.model_table import KeyedTable
from app.ui.state.herd_state import HerdState
from tests.helpers.screen import screen_text
from tests.helpers.standin_fleet import NOW, demo_fleet, workstation_models
from tests.helpers.wait import wait_for

SIZE = (140, 40)


def status(table: KeyedTable, key: str) -> str:
    return table.rows_now[key][table.cols.index(next(c for c in table.cols if c.key == "status"))].text


def rendered_rows(table: KeyedTable) -> list[str]:
    """Spy: the row keys the table draws a line of from now on (the header is "")."""
    seen: list[str] = []
    render = table.render_row

    def spy(index: int, *a: Any, **k: Any) -> Any:
        seen.append(table.order[index] if index >= 0 else "")
        return render(index, *a, **k)

    table.render_row = spy  # type: ignore[method-assign]
    return seen


def changed(model: ModelInfo, **kw: Any) -> ModelInfo:
    return dataclasses.replace(model, **kw)


def by_id(mid: str) -> ModelInfo:
    return next(m for m in workstation_models() if m.id == mid)


async def test_a_delta_changes_its_row_and_repaints_only_that_row() -> None:
    fleet = demo_fleet()
    app: HerdApp = make_app(Config(), fleet, frozen_time=NOW)
    async with app.run_test(size=SIZE) as pilot:
        table = app.dashboard.model_table
        await wait_for(lambda: len(table.rows_now) == 5, pilot=pilot)
        await pilot.pause(0.2)
        others = {k: r for k, r in table.rows_now.items() if k != "mistral-7b"}
        cells = {k: table.get_row(k) for k in others}
        before = status(table, "mistral-7b")
        assert "loading" not in before
        seen = rendered_rows(table)
        fleet.emit(ModelsUpdated("workstation", (changed(by_id("mistral-7b"), state=ModelState.LOADING),)))
        await wait_for(lambda: "loading" in status(table, "mistral-7b"), pilot=pilot)
        # the paint that drew the changed row is the one that would have drawn the others again
        await wait_for(lambda: "mistral-7b" in seen and "loading" in screen_text(app), pilot=pilot)
        assert "loading" in screen_text(app)
        assert set(seen) == {"mistral-7b"}, seen  # the other rows were not drawn again
        assert {k: r for k, r in table.rows_now.items() if k != "mistral-7b"} == others
        assert all(table.get_row(k) == v and all(a is b for a, b in zip(table.get_row(k), v, strict=True))
                   for k, v in cells.items())  # fmt: skip
        assert len(table.rows_now) == 5 and table.row_count == 5


async def test_a_list_read_reconciles_rows_that_came_and_went_after_deltas() -> None:
    fleet = demo_fleet()
    app: HerdApp = make_app(Config(), fleet, frozen_time=NOW)
    async with app.run_test(size=SIZE) as pilot:
        table = app.dashboard.model_table
        await wait_for(lambda: len(table.rows_now) == 5, pilot=pilot)
        table.move_cursor(row=table.get_row_index("llama-3.2-3b"))
        # A delta may name a model not listed yet (a status event before the list): it gets a row.
        fleet.emit(ModelsUpdated("workstation", (ModelInfo("newcomer", ModelState.LOADING),)))
        await wait_for(lambda: "newcomer" in table.rows_now, pilot=pilot)
        assert table.row_count == 6
        # The list read: "broken" is gone, "newcomer" is not in it either, "zeta" came.
        models = (*tuple(m for m in workstation_models() if m.id != "broken"), ModelInfo("zeta", ModelState.UNLOADED))
        fleet.emit(ModelsChanged("workstation", models))
        await wait_for(lambda: "zeta" in table.rows_now, pilot=pilot)
        assert set(table.rows_now) == {m.id for m in models}
        assert set(table.order) == {m.id for m in models} and len(table.order) == len(models)
        assert table.cursor_key() == "llama-3.2-3b"
        assert "newcomer" not in screen_text(app)


async def test_the_fleet_view_applies_a_delta_to_its_row_only() -> None:
    fleet = demo_fleet()
    app: HerdApp = make_app(Config(), fleet, frozen_time=NOW)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 5, pilot=pilot)
        await pilot.press("f")
        ft = app.dashboard.fleet_table
        key = fleet_key("workstation", "mistral-7b")
        await wait_for(lambda: key in ft.rows_now, pilot=pilot)
        await pilot.pause(0.2)
        others = {k: r for k, r in ft.rows_now.items() if k != key}
        fleet.emit(ModelsUpdated("workstation", (changed(by_id("mistral-7b"), state=ModelState.LOADING),)))
        await wait_for(lambda: "loading" in status(ft, key), pilot=pilot)
        assert {k: r for k, r in ft.rows_now.items() if k != key} == others
        assert ft.row_count == len(others) + 1


def test_state_tells_a_delta_from_a_whole_list() -> None:
    st = HerdState(["a", "b"])
    base = workstation_models()
    whole = st.apply([ModelsChanged("a", base)], NOW)
    assert whole.rows_of("a") is None  # reconcile every row
    one = changed(base[1], state=ModelState.LOADING)
    delta = st.apply([ModelsUpdated("a", (one,)), ModelsUpdated("b", (base[0],))], NOW)
    assert delta.rows_of("a") == frozenset({one.id}) and delta.rows_of("b") == frozenset({base[0].id})
    assert st.get("a").models == tuple(one if m.id == one.id else m for m in base)  # in place, order kept
    assert st.get("b").models == (base[0],)
    assert delta.merge(whole).rows_of("a") is None
    for name in ("a", "b"):  # kept by each delta, as a count over the list says
        assert st.get(name).running_count() == sum(1 for m in st.get(name).models if m.state.running)
    st.apply([ModelsUpdated("a", (changed(one, state=ModelState.UNLOADED),))], NOW)
    assert st.get("a").running_count() == sum(1 for m in st.get("a").models if m.state.running)
