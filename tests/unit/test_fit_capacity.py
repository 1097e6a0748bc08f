"""Capacity, verdict and eviction preview (issue 13, items 3 and 4) on hand-made fleet facts."""

from __future__ import annotations

from app.services.core.host_types import GpuStats, HostStats
from app.services.core.router_types import ModelInfo, ModelState
from app.services.fit.capacity import capacity, eviction, load_hint, setup_from_args, shard_paths, summary, verdict
from app.services.fit.estimate import FitEstimate, Part

GB = 10**9


def est(total: int, gpu: int = 0) -> FitEstimate:
    return FitEstimate(Part(total, "w"), Part(0, "k"), Part(0, "c"), Part(0, "p"), n_ctx=256, gpu_bytes=gpu)


def stats(used: int, total: int, gpus: tuple[GpuStats, ...] = ()) -> HostStats:
    return HostStats(cpu_pct=0, mem_used=used, mem_total=total, load_avg=(0, 0, 0), gpus=gpus)


def m(name: str, state: ModelState) -> ModelInfo:
    return ModelInfo(id=name, state=state)


def test_verdict_fits_tight_no_in_ram() -> None:
    cap = capacity(stats(used=10 * GB, total=16 * GB))
    assert cap.free_ram == 6 * GB
    assert verdict(est(4 * GB), cap).verdict == "fits"
    assert verdict(est(int(5.7 * GB)), cap).verdict == "tight"
    assert verdict(est(7 * GB), cap).verdict == "no"
    assert verdict(est(7 * GB), cap, freed=2 * GB).verdict == "fits"


def test_verdict_on_gpu_when_offloaded() -> None:
    gpus = (GpuStats("A", 2000, 8000, 0), GpuStats("B", 8000, 8000, 0))
    cap = capacity(stats(used=1 * GB, total=64 * GB, gpus=gpus))
    assert cap.gpu_count == 2 and cap.gpu_free == 6000 * (1 << 20)
    v = verdict(est(8 * GB, gpu=7 * GB), cap)
    assert (v.verdict, v.where) == ("no", "GPU") and "MiB in RAM" in v.note


def test_eviction_at_models_max() -> None:
    loaded = [m("a", ModelState.LOADED), m("b", ModelState.SLEEPING), m("c", ModelState.UNLOADED)]
    assert eviction("c", loaded, models_max=3).evicts == ()
    unknown = eviction("c", loaded, models_max=2)
    assert not unknown.order_known and unknown.candidates == ("a", "b") and "unknown" in unknown.note
    known = eviction("c", loaded, models_max=2, last_used={"a": 20.0, "b": 10.0})
    assert known.evicts == ("b",) and known.order_known
    assert eviction("a", loaded, models_max=2).evicts == ()  # already running
    assert eviction("c", loaded, models_max=0).evicts == ()  # unlimited
    assert "unknown" in eviction("c", loaded, models_max=None).note


def test_eviction_never_takes_a_loading_model() -> None:
    models = [m("a", ModelState.LOADING), m("b", ModelState.LOADED)]
    assert eviction("c", models, models_max=2).evicts == ("b",)
    refused = eviction("c", [m("a", ModelState.LOADING)], models_max=1)
    assert refused.refused and refused.evicts == ()


def test_summary_names_eviction_and_memory_warning() -> None:
    cap = capacity(stats(used=10 * GB, total=16 * GB))
    line = summary(verdict(est(4 * GB), cap), eviction("c", [m("chat-small", ModelState.LOADED)], 1))
    assert line == "fits · 3.7 GiB of 5.6 GiB free (RAM) · evicts chat-small"
    assert "memory does not" in summary(verdict(est(9 * GB), cap), eviction("c", [], 4))


def test_setup_from_rendered_args() -> None:
    args = ["llama-server", "-m", "/m/x.gguf", "--ctx-size", "8192", "-ctk", "q8_0", "--cache-type-v=q4_0"]
    s = setup_from_args([*args, "-np", "2", "--mmproj", "/m/p.gguf", "-ngl", "10"], has_gpu=True)
    assert s.model_path == "/m/x.gguf" and s.mmproj_path == "/m/p.gguf"
    st = s.settings
    assert (st.ctx_size, st.cache_type_k, st.cache_type_v, st.parallel, st.kv_unified) == (
        8192,
        "q8_0",
        "q4_0",
        2,
        False,
    )
    assert st.n_gpu_layers == 10
    auto = setup_from_args(args, has_gpu=False).settings
    assert (auto.parallel, auto.kv_unified, auto.n_gpu_layers) == (4, True, 0)
    assert setup_from_args(args, has_gpu=True).settings.n_gpu_layers >= 1000


def test_shard_paths() -> None:
    assert shard_paths("/m/big-00001-of-00003.gguf") == [
        "/m/big-00001-of-00003.gguf",
        "/m/big-00002-of-00003.gguf",
        "/m/big-00003-of-00003.gguf",
    ]
    assert shard_paths("/m/one.gguf") == ["/m/one.gguf"]


def test_load_hint_for_the_palette() -> None:
    models = [m("chat-small", ModelState.LOADED), m("big", ModelState.UNLOADED)]
    hint = load_hint("big", models, 1, stats(used=10 * GB, total=16 * GB))
    assert hint == "5.6 GiB RAM free · evicts chat-small"
    assert load_hint("big", models, 4, None) == ""
    assert load_hint("big", [m("a", ModelState.LOADING)], 1, None) == "router full, nothing idle: it will refuse"


def test_a_small_estimate_is_not_rounded_to_nothing_and_units_are_the_dashboards() -> None:
    """`fit` said `fits · 0.0 of 24.7 GB free` for a tiny model (issue 38, case 8), in decimal GB beside the
    dashboard's GiB."""
    cap = capacity(stats(used=1 << 30, total=26 << 30))
    line = summary(verdict(est(3 << 20), cap), eviction("c", [], 4))
    assert line.startswith("fits · 3 MiB of 25.0 GiB free")
    assert "0.0" not in line and "GB" not in line
