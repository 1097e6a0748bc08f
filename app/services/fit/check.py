"""Gather what a fit verdict needs from one machine (its memory, its router's models, the model's header and
file sizes) and hand it to the pure estimate/capacity functions. Used by `llamaherd fit`."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from app.services.core.errors import HerdError
from app.services.core.router_types import ModelInfo
from app.services.files.scan import read_header
from app.services.fit.capacity import (
    Capacity,
    Eviction,
    ModelSetup,
    Verdict,
    capacity,
    eviction,
    setup_from_args,
    shard_paths,
    summary,
    verdict,
)
from app.services.fit.estimate import FitEstimate, FitInputError, estimate
from app.services.machine.machine import Machine

CHECK_TIMEOUT = 30.0


@dataclass
class FitReport:
    machine: str
    model: str
    estimate: FitEstimate | None = None
    capacity: Capacity | None = None
    verdict: Verdict | None = None
    eviction: Eviction | None = None
    reason: str = ""  # why there is no verdict
    sources: dict[str, str] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "machine": self.machine,
            "model": self.model,
            "estimate_bytes": self.estimate.as_dict() if self.estimate else None,
            "free_bytes": self.verdict.free if self.verdict else None,
            "verdict": self.verdict.verdict if self.verdict else "unknown",
            "evicts": list(self.eviction.evicts) if self.eviction else [],
        }
        if self.verdict:
            out["memory"] = self.verdict.where
        if self.eviction:
            out["evicts_one_of"] = list(self.eviction.candidates)
            out["eviction_note"] = self.eviction.note
        if self.estimate:
            out["n_ctx"] = self.estimate.n_ctx
            out["sources"] = self.sources
        if self.reason:
            out["reason"] = self.reason
        return out

    def line(self) -> str:
        if self.verdict is None or self.eviction is None:
            return f"{self.machine}: {self.model}: unknown ({self.reason})"
        return f"{self.machine}: {self.model}: {summary(self.verdict, self.eviction)}"


def _find(models: list[ModelInfo], name: str) -> ModelInfo | None:
    for m in models:
        if m.id == name or name in m.aliases:
            return m
    return None


async def _estimate_for(m: Machine, setup: ModelSetup, ctx: int | None) -> FitEstimate:
    if not setup.model_path:
        raise FitInputError("the router's arguments for it name no model file")
    path = await m.transport.expand(setup.model_path)
    header = await read_header(m.transport, path)
    if header is None:
        raise FitInputError(f"{path}: not a readable GGUF file")
    sizes = []
    for shard in shard_paths(path):
        info = await m.transport.stat(shard)
        if info is None:
            raise FitInputError(f"{shard}: missing")
        sizes.append(info.size)
    projector = 0
    if setup.mmproj_path:
        info = await m.transport.stat(await m.transport.expand(setup.mmproj_path))
        projector = info.size if info else 0
    settings = setup.settings
    if ctx is not None:
        settings = type(settings)(**{**vars(settings), "ctx_size": ctx})
    return estimate(header, sizes, settings, projector_bytes=projector)


async def estimate_model(m: Machine, target: ModelInfo, has_gpu: bool) -> FitEstimate:
    """The estimate for one of the router's models under its own settings (its rendered arguments): a header
    read and a stat per shard on the machine. Raises FitInputError, OSError or HerdError when it cannot."""
    return await _estimate_for(m, setup_from_args(target.args, has_gpu), None)


async def estimate_section(m: Machine, section: dict[str, str], has_gpu: bool) -> FitEstimate:
    """The estimate for a preset section not written yet (the model files screen's new section): its keys are
    the long flags the router would render (`ctx-size = 4096` is `--ctx-size 4096`)."""
    args = [a for key, value in section.items() for a in (f"--{key}", value)]
    return await _estimate_for(m, setup_from_args(args, has_gpu), None)


async def check_machine(m: Machine, model: str, ctx: int | None = None) -> FitReport:
    """The verdict for `model` on machine `m` (connected here; the caller closes it)."""
    report = FitReport(m.name, model)
    try:
        async with asyncio.timeout(CHECK_TIMEOUT):
            await m.transport.connect()
            stats = await m.transport.host_stats()
            client = await m.connect_router()
            models = await client.models()
            target = _find(models, model)
            if target is None:
                report.reason = "not among this router's models"
                return report
            report.model = target.id
            models_max = (await client.props()).max_instances
            cap = capacity(stats)
            has_gpu = cap.gpu_count + cap.gpu_unknown > 0
            est = await _estimate_for(m, setup_from_args(target.args, has_gpu), ctx)
            ev = eviction(target.id, models, models_max)
            freed = 0
            if ev.evicts:  # the victim's memory comes back; counted only when its estimate can be made
                victim = _find(models, ev.evicts[0])
                if victim is not None:
                    try:
                        freed = (await _estimate_for(m, setup_from_args(victim.args, has_gpu), None)).total
                    except (FitInputError, OSError, HerdError):
                        freed = 0
            report.estimate, report.capacity, report.eviction = est, cap, ev
            report.verdict = verdict(est, cap, freed)
            report.sources = {
                "weights": est.weights.source,
                "kv": est.kv.source,
                "compute": est.compute.source,
                "projector": est.projector.source,
                "free": "host memory (total − used, /proc/meminfo)" + (" and nvidia-smi" if has_gpu else ""),
            }
    except TimeoutError:
        report.reason = f"no answer within {CHECK_TIMEOUT:.0f} s"
    except (FitInputError, OSError) as e:
        report.reason = str(e)
    except HerdError as e:
        report.reason = str(e)
    return report
