"""Shared by the benchmarks: tiny models and real routers in a temporary directory, and figure printing."""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

from app.services.binary import HOW_TO_GET, find_llama_server
from app.tinymodels import TinySpec, write_corrupt_model, write_tiny_model
from tests.helpers.router import RouterProc, preset_text


def workdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="llamaherd-bench-"))


def tiny_models(d: Path) -> dict[str, Path]:
    return {
        "alpha": write_tiny_model(d / "alpha.gguf", TinySpec(name="alpha", seed=1)),
        "beta": write_tiny_model(d / "beta.gguf", TinySpec(name="beta", seed=2)),
        "broken": write_corrupt_model(d / "broken.gguf"),
    }


def start_router(
    d: Path, models: dict[str, Path | str], name: str = "r", models_max: int = 1, healthy_within: float = 30.0
) -> RouterProc:
    """`healthy_within`: a preset of 20,000 sections takes the router itself about 90 s to read on 2 cores."""
    binary = find_llama_server()
    if binary is None:
        raise SystemExit(HOW_TO_GET)
    preset = d / f"{name}.ini"
    preset.write_text(preset_text(models))
    router = RouterProc(binary=binary, preset=preset, log=d / f"{name}.log", models_max=models_max).start(wait=False)
    try:
        router.wait_healthy(timeout=healthy_within)
    except BaseException:
        router.stop()
        raise
    return router


def figures(label: str, samples_ms: list[float]) -> str:
    s = sorted(samples_ms)
    p95 = s[min(len(s) - 1, round(0.95 * (len(s) - 1)))]
    return (
        f"{label}: n={len(s)} median={statistics.median(s):.1f} ms p95={p95:.1f} ms "
        f"min={s[0]:.1f} ms max={s[-1]:.1f} ms"
    )
