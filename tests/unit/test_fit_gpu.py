"""GPU capacity from nvidia-smi output kept in tests/data/nvidia_smi (see the README there: constructed, not
recorded on a GPU machine)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.services.core.host_types import HostStats
from app.services.fit.capacity import capacity, verdict
from app.services.fit.estimate import FitEstimate, Part
from app.services.hosts.proc_probes import parse_nvidia_smi

DATA = Path(__file__).parent.parent / "data" / "nvidia_smi"
MIB = 1 << 20


def host(name: str) -> HostStats:
    gpus = parse_nvidia_smi((DATA / name).read_text())
    return HostStats(cpu_pct=0, mem_used=8 << 30, mem_total=64 << 30, load_avg=(0, 0, 0), gpus=gpus)


@pytest.mark.parametrize(
    ("name", "count", "unknown", "free_mib"),
    [
        ("single_rtx3090.csv", 1, 0, 24576 - 1187),
        ("two_a100.csv", 2, 0, (81920 - 68399) + (81920 - 76761)),
        ("mig_na.csv", 0, 1, 0),
        ("laptop_not_supported.csv", 1, 0, 4096 - 512),
    ],
)
def test_gpu_capacity(name: str, count: int, unknown: int, free_mib: int) -> None:
    cap = capacity(host(name))
    assert (cap.gpu_count, cap.gpu_unknown, cap.gpu_free) == (count, unknown, free_mib * MIB)


def test_offloaded_model_judged_on_gpu_or_ram_when_gpu_memory_unknown() -> None:
    def est(gib: int) -> FitEstimate:
        return FitEstimate(
            Part(gib << 30, "w"), Part(0, "k"), Part(0, "c"), Part(0, "p"), n_ctx=256, gpu_bytes=gib << 30
        )

    a100s = capacity(host("two_a100.csv"))  # 18680 MiB free over the two
    assert [(v.where, v.verdict) for v in (verdict(est(g), a100s) for g in (10, 17, 19))] == [
        ("GPU", "fits"),
        ("GPU", "tight"),
        ("GPU", "no"),
    ]
    mig = verdict(est(10), capacity(host("mig_na.csv")))
    assert mig.where == "RAM" and "unknown" in mig.note and mig.verdict == "fits"
