"""The model fold: what a router's list and status events make of the models we knew."""

from __future__ import annotations

from app.services.core.router_types import LoadProgress, ModelInfo, ModelState, ModelStatusEvent, RouterState
from app.services.lifecycle.manager import RouterRecord
from app.services.router.model_fold import first_sight, fold_list, fold_router_gone, fold_status

PROGRESS = LoadProgress(stages=("load",), current="load", value=0.5)


def _ev(model: str, status: ModelState, **kw: object) -> ModelStatusEvent:
    return ModelStatusEvent(model=model, kind="status_change", status=status, **kw)  # type: ignore[arg-type]


def test_list_keeps_progress_of_a_loading_model_and_meta_it_dropped() -> None:
    known = {
        "a": ModelInfo(id="a", state=ModelState.LOADING, progress=PROGRESS),
        "b": ModelInfo(id="b", state=ModelState.LOADED, n_ctx=4096, n_params=7, size=99),
    }
    listed = [ModelInfo(id="a", state=ModelState.LOADING), ModelInfo(id="b", state=ModelState.UNLOADED)]
    got = fold_list(known, listed)
    assert got["a"].progress == PROGRESS
    assert (got["b"].state, got["b"].n_ctx, got["b"].n_params, got["b"].size) == (ModelState.UNLOADED, 4096, 7, 99)


def test_list_is_the_truth_for_what_it_says() -> None:
    known = {
        "a": ModelInfo(id="a", state=ModelState.LOADING, progress=PROGRESS, n_ctx=1),
        "gone": ModelInfo(id="gone", state=ModelState.LOADED),
    }
    listed = [ModelInfo(id="a", state=ModelState.LOADED, n_ctx=2048), ModelInfo(id="new", state=ModelState.UNLOADED)]
    got = fold_list(known, listed)
    assert list(got) == ["a", "new"]  # the list's order; a model it no longer has is gone
    assert got["a"].progress is None and got["a"].n_ctx == 2048  # loaded: no progress kept; the list's own n_ctx wins
    assert got["new"] == listed[1]


def test_status_loading_clears_a_failure_and_keeps_progress_until_a_new_one() -> None:
    failed = ModelInfo(id="a", state=ModelState.FAILED, exit_code=1, failed=True)
    loading = fold_status(failed, _ev("a", ModelState.LOADING))
    assert (loading.state, loading.exit_code, loading.failed) == (ModelState.LOADING, None, False)
    assert loading.progress is None
    with_progress = fold_status(loading, _ev("a", ModelState.LOADING, progress=PROGRESS))
    assert with_progress.progress == PROGRESS
    assert fold_status(with_progress, _ev("a", ModelState.LOADING)).progress == PROGRESS
    assert fold_status(with_progress, _ev("a", ModelState.LOADED)).progress is None


def test_status_exit_code_sets_failed_only_when_non_zero() -> None:
    m = ModelInfo(id="a", state=ModelState.LOADED)
    assert fold_status(m, _ev("a", ModelState.FAILED, exit_code=3)).failed is True
    clean = fold_status(m, _ev("a", ModelState.UNLOADED, exit_code=0))
    assert (clean.failed, clean.exit_code) == (False, 0)


def test_status_takes_integer_meta_and_ignores_the_rest() -> None:
    info = {"meta": {"n_ctx": 8192, "n_params": "many", "size": 123}}
    got = fold_status(first_sight("x"), _ev("x", ModelState.LOADED, info=info))
    assert (got.id, got.state, got.n_ctx, got.n_params, got.size) == ("x", ModelState.LOADED, 8192, None, 123)


def test_an_event_that_says_nothing_new_changes_nothing() -> None:
    base = first_sight("x")
    assert fold_status(base, _ev("x", ModelState.UNKNOWN)) == base


def test_router_gone_unloads_everything() -> None:
    known = {
        "a": ModelInfo(id="a", state=ModelState.LOADING, progress=PROGRESS),
        "b": ModelInfo(id="b", state=ModelState.LOADED, n_ctx=5),
    }
    got = fold_router_gone(known)
    assert all(m.state is ModelState.UNLOADED and m.progress is None for m in got.values())
    assert got["b"].n_ctx == 5
    assert known["a"].state is ModelState.LOADING  # the input is left alone


def test_record_state_is_a_router_state_and_its_file_format_unchanged() -> None:
    rec = RouterRecord(pid=1, start_time=2.0, port=3, program="p", preset="x.ini", log="l", state=RouterState.STOPPING)
    text = rec.to_json()
    assert b'"state": "stopping"' in text
    back = RouterRecord.from_json(text)
    assert back == rec and back is not None and back.state is RouterState.STOPPING
    assert RouterRecord.from_json(text.replace(b'"stopping"', b'"sideways"')) is None  # damaged: stale
    old = b'{"pid": 1, "start_time": 2.0, "port": 3, "program": "p", "preset": "x.ini", "log": "l"}'
    assert RouterRecord.from_json(old) == RouterRecord(1, 2.0, 3, "p", "x.ini", "l", RouterState.RUNNING)


def test_what_a_running_model_said_of_pictures_is_kept_after_it_stops() -> None:
    ready = {"architecture": {"input_modalities": ["text", "image"]}, "meta": {"n_ctx": 256}}
    loaded = fold_status(ModelInfo(id="v", state=ModelState.LOADING), _ev("v", ModelState.LOADED, info=ready))
    assert loaded.input_modalities == ("text", "image") and loaded.vision_said is True
    # A text model seen running in the list, then the list after its unload (the router keeps its arrays).
    known = fold_list({}, [ModelInfo(id="t", state=ModelState.LOADED)])
    assert known["t"].vision_said is False
    known = fold_list(known, [ModelInfo(id="t", state=ModelState.UNLOADED)])
    assert known["t"].vision_said is False
    assert fold_router_gone(known)["t"].vision_said is False
    # Garbage in the ready payload changes nothing.
    odd_ev = _ev("o", ModelState.LOADED, info={"architecture": 3})
    odd = fold_status(ModelInfo(id="o", state=ModelState.LOADING), odd_ev)
    assert odd.input_modalities == ("text",) and odd.vision_said is None
