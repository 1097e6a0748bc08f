"""The dashboard's fit estimates: one per model and setting, not one per load (the router renders a new --port on
every load, and an unloaded model keeps its last one: keyed by it, a load/unload cycle grew the store for ever and
asked for a new estimate each time)."""

from __future__ import annotations

from app.ui.dashboard.fit_verdicts import FitAdvisor, Known, fit_args


def test_the_port_is_not_part_of_a_models_settings() -> None:
    a = ("llama-server", "--ctx-size", "512", "--port", "41001", "--alias", "x")
    assert fit_args(a) == ("llama-server", "--ctx-size", "512", "--alias", "x")
    assert fit_args(a) == fit_args(("llama-server", "--ctx-size", "512", "--port", "52002", "--alias", "x"))
    assert fit_args(("--port=4100", "-c", "8")) == ("-c", "8")
    assert fit_args(("-c", "8")) != fit_args(("-c", "16"))  # a real setting still counts


def test_the_store_holds_one_estimate_per_model_past_many_settings() -> None:
    advisor = FitAdvisor(lambda: None, lambda machine: None, lambda: 0.0)  # type: ignore[arg-type,return-value]
    for i in range(1_000):  # past the bound: one entry per (machine, model)
        for model in ("a", "b"):
            advisor.remember(("here", model, ("-c", str(i)), False), Known(None, f"run {i}", 0.0))
    assert len(advisor._known) == 2 and len(advisor._latest) == 2
    assert advisor._known[("here", "a", ("-c", "999"), False)].reason == "run 999"
    assert advisor._stored == 2_000  # each store is new for the fleet view's cached words
