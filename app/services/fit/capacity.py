"""Will a model fit on a machine, and what will its load push out: pure functions over what the fleet knows.

- capacity: the host's free RAM (total − used, where used already counts the loaded models' processes) and,
  where nvidia-smi answered, the GPUs' free memory;
- verdict: `fits`, `tight` (less than 10 % of the free memory left over) or `no`, against the estimate;
- eviction: the router evicts its least recently used idle model (`loaded` or `sleeping`, never `loading`) when
  the running instances reach `models_max` (<= 0: unlimited). The order of use is not always known; the preview
  says so and names the candidates.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from app.services.core.host_types import HostStats
from app.services.core.natural_order import natural_sorted
from app.services.core.router_types import ModelInfo, ModelState
from app.services.fit.estimate import DEFAULT_PARALLEL, FitEstimate, FitSettings

TIGHT_HEADROOM = 0.10
MB = 1 << 20
_SHARD_RE = re.compile(r"^(?P<stem>.*)-(?P<i>\d{5})-of-(?P<n>\d{5})\.gguf$")

GIB = float(1 << 30)


def gib(n: int) -> str:
    """Binary units an operator reads at a glance: 9.1 GiB, or 312 MiB below one GiB (a small model is not 0.0)."""
    if abs(n) >= GIB:
        return f"{n / GIB:.1f} GiB"
    return f"{n / (1 << 20):.0f} MiB" if abs(n) >= 1 << 20 else f"{n / 1024:.0f} KiB"


@dataclass(frozen=True)
class Capacity:
    free_ram: int
    total_ram: int
    gpu_free: int  # summed over GPUs (llama.cpp splits layers across them); 0 when none was seen
    gpu_count: int  # GPUs whose memory is known
    gpu_unknown: int = 0  # GPUs nvidia-smi listed without a memory figure ("[N/A]": MIG, some vGPUs)


@dataclass(frozen=True)
class Eviction:
    evicts: tuple[str, ...]  # what the load will unload (empty: nothing)
    candidates: tuple[str, ...]  # when the order of use is unknown: the idle models one of which goes
    order_known: bool
    refused: bool  # at models_max with nothing evictable: the router answers "model limit reached"
    note: str


@dataclass(frozen=True)
class Verdict:
    verdict: str  # "fits", "tight" or "no"
    need: int
    free: int
    where: str  # "RAM" or "GPU"
    note: str


@dataclass(frozen=True)
class ModelSetup:
    """What a model's rendered arguments say about its memory: the files and the settings."""

    model_path: str
    mmproj_path: str
    settings: FitSettings


def capacity(stats: HostStats) -> Capacity:
    known = [g for g in stats.gpus if g.memory_total_mb > 0]
    gpu_free = sum(max(0.0, g.memory_total_mb - g.memory_used_mb) for g in known)
    return Capacity(
        free_ram=max(0, stats.mem_total - stats.mem_used),
        total_ram=stats.mem_total,
        gpu_free=int(gpu_free * MB),
        gpu_count=len(known),
        gpu_unknown=len(stats.gpus) - len(known),
    )


def shard_paths(path: str) -> list[str]:
    """Every shard of a split model (`name-00001-of-00003.gguf`), or just the path."""
    m = _SHARD_RE.match(path)
    if not m:
        return [path]
    n = int(m["n"])
    return [f"{m['stem']}-{i:05d}-of-{n:05d}.gguf" for i in range(1, n + 1)]


_FLAGS = {
    "-m": "model",
    "--model": "model",
    "--mmproj": "mmproj",
    "-mm": "mmproj",
    "-c": "ctx",
    "--ctx-size": "ctx",
    "-ctk": "ctk",
    "--cache-type-k": "ctk",
    "-ctv": "ctv",
    "--cache-type-v": "ctv",
    "-np": "parallel",
    "--parallel": "parallel",
    "-ngl": "ngl",
    "--gpu-layers": "ngl",
    "--n-gpu-layers": "ngl",
    "-ub": "ubatch",
    "--ubatch-size": "ubatch",
}


def setup_from_args(args: Sequence[str], has_gpu: bool) -> ModelSetup:
    """Read the settings from a model's rendered argument list (`status.args`), with llama-server's defaults:
    `--parallel` auto is 4 slots with a unified KV cache; an explicit one is not unified unless asked;
    `--n-gpu-layers` unset offloads everything when there is a GPU."""
    seen: dict[str, str] = {}
    unified: bool | None = None
    it = iter(args)
    for a in it:
        if a in ("-kvu", "--kv-unified"):
            unified = True
        elif a in ("-no-kvu", "--no-kv-unified"):
            unified = False
        elif a in _FLAGS:
            seen[_FLAGS[a]] = next(it, "")
        elif a.startswith("--") and "=" in a and a.split("=", 1)[0] in _FLAGS:
            flag, value = a.split("=", 1)
            seen[_FLAGS[flag]] = value

    def num(key: str, default: int) -> int:
        try:
            return int(seen[key])
        except (KeyError, ValueError):
            return default

    parallel = num("parallel", -1)
    auto = parallel <= 0
    every_layer = 10**6
    ngl = 0
    if has_gpu:
        ngl = every_layer if seen.get("ngl", "auto") in ("auto", "all", "-1") else num("ngl", every_layer)
    settings = FitSettings(
        ctx_size=num("ctx", 0),
        cache_type_k=seen.get("ctk", "f16"),
        cache_type_v=seen.get("ctv", "f16"),
        parallel=DEFAULT_PARALLEL if auto else parallel,
        kv_unified=unified if unified is not None else auto,
        n_gpu_layers=ngl,
        n_ubatch=num("ubatch", FitSettings().n_ubatch),
    )
    return ModelSetup(seen.get("model", ""), seen.get("mmproj", ""), settings)


def eviction(
    target: str,
    models: Sequence[ModelInfo],
    models_max: int | None,
    last_used: Mapping[str, float] | None = None,
) -> Eviction:
    """Which model loading `target` will unload, as the router's `load()` decides it (one LRU victim at most)."""
    running = [m for m in models if m.state.running]
    if any(m.id == target for m in running):
        return Eviction((), (), True, False, "already running: nothing to evict")
    if models_max is None:
        return Eviction((), (), False, False, "models_max unknown: eviction cannot be previewed")
    if models_max <= 0 or len(running) < models_max:
        room = "unlimited" if models_max <= 0 else f"{len(running)} of {models_max} running"
        return Eviction((), (), True, False, f"room left ({room})")
    idle = [m for m in running if m.state in (ModelState.LOADED, ModelState.SLEEPING)]
    if not idle:
        return Eviction((), (), True, True, f"{models_max} running, none idle: the router refuses the load")
    known = {m.id: last_used[m.id] for m in idle if last_used and m.id in last_used}
    if len(idle) == 1 or len(known) == len(idle):
        victim = min(idle, key=lambda m: known.get(m.id, 0.0)).id
        return Eviction((victim,), (), True, False, f"at models_max {models_max}: the least recently used goes")
    names = tuple(natural_sorted([m.id for m in idle]))
    return Eviction(
        (), names, False, False, f"at models_max {models_max}: one of {', '.join(names)} goes (order of use unknown)"
    )


def verdict(est: FitEstimate, cap: Capacity, freed: int = 0) -> Verdict:
    """fits / tight / no, on the GPU when the estimate puts anything there and a GPU was seen, else in RAM.
    `freed`: what an eviction gives back (only counted when it is known which model goes)."""
    if est.gpu_bytes and cap.gpu_count:
        need, free, where = est.gpu_bytes, cap.gpu_free + freed, "GPU"
        host_need = est.host_bytes
        note = f"and {host_need / MB:.0f} MiB in RAM" if host_need else ""
    else:
        need, free, where, note = est.total, cap.free_ram + freed, "RAM", ""
        if est.gpu_bytes and cap.gpu_unknown:
            note = "GPU memory unknown (nvidia-smi gave no figure): judged against RAM"
    if need > free:
        word = "no"
    elif free - need < TIGHT_HEADROOM * free:
        word = "tight"
    else:
        word = "fits"
    return Verdict(word, need, free, where, note)


def summary(v: Verdict, ev: Eviction) -> str:
    """One line for the CLI: "fits · 4.1 GiB of 6.0 GiB free (RAM) · evicts chat-small", in the dashboard's
    binary units (it said "0.0 of 24.7 GB": a small estimate rounded to nothing, in decimal units)."""
    parts = [v.verdict, f"{gib(v.need)} of {gib(v.free)} free ({v.where})"]
    if ev.evicts:
        parts.append("evicts " + ", ".join(ev.evicts))
    elif ev.candidates:
        parts.append("evicts one of " + ", ".join(ev.candidates))
    elif ev.refused:
        parts.append("router full, nothing idle")
    if v.verdict == "no" and not ev.evicts and not ev.refused:
        parts.append("models_max allows it but memory does not")
    return " · ".join(parts)


def load_hint(target: str, models: Sequence[ModelInfo], models_max: int | None, stats: HostStats | None) -> str:
    """What the palette's "Load" entry adds from what the fleet already holds (no file is read for it): the
    eviction and the free memory. The estimate and so the verdict need the model's header: `llamaherd fit`."""
    parts = []
    if stats is not None:
        cap = capacity(stats)
        parts.append(f"{gib(cap.free_ram)} RAM free")
        if cap.gpu_count:
            parts.append(f"{gib(cap.gpu_free)} GPU free")
    ev = eviction(target, models, models_max)
    if ev.evicts:
        parts.append("evicts " + ", ".join(ev.evicts))
    elif ev.candidates:
        parts.append("evicts one of " + ", ".join(ev.candidates))
    elif ev.refused:
        parts.append("router full, nothing idle: it will refuse")
    return " · ".join(parts)
