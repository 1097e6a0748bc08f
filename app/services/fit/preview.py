"""What the dashboard says before a load: the verdict, the eviction, and whether `l` should ask first.

Pure, over what the UI already holds (the machine's models, its models_max, its last host stats) and an estimate
made elsewhere (a header read, off the UI). An estimate that could not be made is "unknown", with the reason:
the load then goes ahead without asking, since a guess is no ground to stop an operator.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from app.services.core.host_types import HostStats
from app.services.core.router_types import ModelInfo, ModelState
from app.services.fit.capacity import capacity, eviction, gib, verdict
from app.services.fit.estimate import FitEstimate


@dataclass(frozen=True)
class FitPreview:
    verdict: str  # "fits", "tight", "no", "unknown", or "running" (nothing to load)
    line: str  # one line for the palette: "fits · needs 4.1 of 6.0 GiB free RAM · evicts chat-small"
    evicts: tuple[str, ...] = ()
    question: str = ""  # non-empty: `l` asks this before loading

    @property
    def ask(self) -> bool:
        return bool(self.question)


def _free_text(stats: HostStats | None) -> str:
    if stats is None:
        return "free memory not known yet"
    cap = capacity(stats)
    text = f"{gib(cap.free_ram)} RAM free"
    return text + f", {gib(cap.gpu_free)} GPU free" if cap.gpu_count else text


def preview(
    machine: str,
    model_id: str,
    models: Sequence[ModelInfo],
    models_max: int | None,
    stats: HostStats | None,
    est: FitEstimate | None,
    unknown_reason: str = "",
    victim_est: FitEstimate | None = None,
) -> FitPreview:
    """The preview of loading `model_id` on `machine`. `victim_est`: the estimate of the model the load evicts,
    whose memory comes back (counted only when it is known which one goes)."""
    target = next((m for m in models if m.id == model_id), None)
    if target is not None and target.state.running:
        return FitPreview("running", f"already {target.state.value}")
    ev = eviction(model_id, models, models_max)
    if ev.evicts:
        evict_text = "evicts " + ", ".join(ev.evicts) + " (LRU)"
    elif ev.candidates:
        evict_text = "evicts one of " + ", ".join(ev.candidates) + " (order of use unknown)"
    elif ev.refused:
        evict_text = "router full, nothing idle: it will refuse"
    else:
        evict_text = ""
    if est is None or stats is None:
        why = unknown_reason or ("no host stats yet" if stats is None else "not estimated yet")
        parts = [f"fit unknown ({why})", _free_text(stats)] + ([evict_text] if evict_text else [])
        question = ""
        if ev.evicts or ev.candidates:
            # the eviction is known without the estimate (models_max and what runs), and is what surprises people
            victims = ", ".join(ev.evicts) + " (LRU)" if ev.evicts else "one of " + ", ".join(ev.candidates)
            question = f"{model_id}: fit unknown ({why}); loading it on {machine} evicts {victims}. Load anyway?"
        return FitPreview("unknown", " · ".join(parts), ev.evicts, question)
    freed = victim_est.total if (ev.evicts and victim_est is not None) else 0
    v = verdict(est, capacity(stats), freed)
    where = f"{v.where}{' after the eviction' if freed else ''}"
    parts = [v.verdict, f"needs {gib(v.need)} of {gib(v.free)} free {where}"]
    if v.note:
        parts.append(v.note)
    if evict_text:
        parts.append(evict_text)
    projector = f" + projector {gib(est.projector.bytes)}" if est.projector.bytes else ""
    parts.append(
        f"estimate: weights {gib(est.weights.bytes)} + KV {gib(est.kv.bytes)} (ctx {est.n_ctx})"
        f" + compute {gib(est.compute.bytes)}{projector}"
    )
    question = ""
    if v.verdict == "no" or ev.evicts or ev.candidates:
        gpu = " GPU" if v.where == "GPU" else ""
        said = f"{model_id} needs ~{gib(v.need)}, {gib(v.free - freed)}{gpu} free on {machine}"
        if ev.evicts:
            said += f"; loading evicts {', '.join(ev.evicts)} (LRU)"
            said += f", which gives back ~{gib(freed)}" if freed else ""
        elif ev.candidates:
            said += f"; loading evicts one of {', '.join(ev.candidates)} (order of use unknown)"
        if v.verdict == "no":
            said += "; it does not fit" + (" even then" if freed else "")
        question = said + ". Load anyway?"
    return FitPreview(v.verdict, " · ".join(parts), ev.evicts, question)


def file_line(machine: str, est: FitEstimate, stats: HostStats | None) -> str:
    """The estimate of a file before it is added, and what it would meet on the machine now."""
    projector = f" + projector {gib(est.projector.bytes)}" if est.projector.bytes else ""
    line = (
        f"estimate ~{gib(est.total)}: weights {gib(est.weights.bytes)} + KV {gib(est.kv.bytes)} (ctx {est.n_ctx})"
        f" + compute {gib(est.compute.bytes)}{projector}"
    )
    if stats is None:
        return line + f" · free memory on {machine} not known yet"
    v = verdict(est, capacity(stats))
    return line + f" · {v.verdict} on {machine}: needs {gib(v.need)} of {gib(v.free)} free {v.where}"


def verdict_words(
    models: Sequence[ModelInfo],
    models_max: int | None,
    stats: HostStats | None,
    estimate_of: Callable[[ModelInfo], FitEstimate | None],
) -> dict[str, str]:
    """Per model not running, the verdict `preview` would give ("fits", "tight", "no"; "unknown" without an
    estimate or host stats), worked out once for what runs: which model a load evicts does not depend on which
    model is loaded, so a fleet view of 20,000 models is not 20,000 previews among 20,000 models."""
    idle = [m for m in models if not m.state.running]
    if stats is None:
        return {m.id: "unknown" for m in idle}
    running = [m for m in models if m.state.running]
    probe = ModelInfo(id="\x00", state=ModelState.UNLOADED)  # any model not running: the eviction is the same
    ev = eviction(probe.id, [*running, probe], models_max)
    victim = next((m for m in running if ev.evicts and m.id == ev.evicts[0]), None)
    victim_est = estimate_of(victim) if victim is not None else None
    freed = victim_est.total if (ev.evicts and victim_est is not None) else 0
    cap = capacity(stats)
    words: dict[str, str] = {}
    for m in idle:
        est = estimate_of(m)
        words[m.id] = "unknown" if est is None else verdict(est, cap, freed).verdict
    return words
