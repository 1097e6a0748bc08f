"""A fit verdict for a file still on the hub: its GGUF header read with a Range request (never the file), its
size from the hub's listing, and the machine's memory and router, judged by the same estimate as `llamaherd fit`.

The settings are those a cache model gets on that router: the arguments of a cache model already in its list
(the preset's `[*]` section plus `--hf-repo`), else llama-server's defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from app.services.core.router_types import ModelInfo
from app.services.files.gguf_header import GgufFormatError, GgufHeader, parse_gguf_header
from app.services.files.scan import FIRST_READ, MAX_HEADER
from app.services.fit.capacity import Capacity, eviction, setup_from_args, summary, verdict
from app.services.fit.estimate import FitInputError, estimate
from app.services.hub.hub_api import HubClient, HubError
from app.services.hub.repo_files import QuantFile


@dataclass(frozen=True)
class FileFit:
    quant: str
    verdict: str  # "fits", "tight", "no" or "unknown"
    line: str  # "fits · 0.0 of 3.1 GB free (RAM) · evicts tiny" or why unknown
    need: int | None = None


async def header_over_http(hub: HubClient, repo: str, path: str) -> GgufHeader:
    """The header from the file's first bytes, asking for more while the header goes on (as files/scan.py)."""
    n = FIRST_READ
    while True:
        data = await hub.head_bytes(repo, path, n)
        try:
            header = parse_gguf_header(data)
        except GgufFormatError as e:
            raise HubError(f"{repo}/{path}: not a GGUF file ({e})") from None
        if not header.truncated or len(data) < n or n >= MAX_HEADER:
            return header
        n = min(MAX_HEADER, max(n * 4, 2 * (header.bytes_needed or 0)))


def cache_args(models: list[ModelInfo], preset_args: tuple[str, ...] = ()) -> tuple[str, ...]:
    """What a new cache model's arguments will be like: a cache model's own (the router rendered the preset's `[*]`
    into them), else the preset's `[*]` as arguments, else none (llama-server's defaults)."""
    for m in models:
        if m.source == "cache" and m.args:
            return m.args
    return preset_args


def section_args(values: Mapping[str, str]) -> tuple[str, ...]:
    """A preset section's keys as the arguments the router renders from them: `ctx-size = 8192` is
    `--ctx-size 8192`, `kv-unified = true` is `--kv-unified` (false: `--no-kv-unified`)."""
    out: list[str] = []
    for key, value in values.items():
        name = key.strip().lstrip("-")
        word = value.strip().lower()
        if word in ("true", "on", "yes"):
            out.append(f"--{name}")
        elif word in ("false", "off", "no"):
            out.append(f"--no-{name}")
        else:
            out += [f"--{name}", value.strip()]
    return tuple(out)


async def file_fit(
    hub: HubClient,
    repo: str,
    q: QuantFile,
    projector: QuantFile | None,
    cap: Capacity,
    models: list[ModelInfo],
    models_max: int | None,
    preset_args: tuple[str, ...] = (),
) -> FileFit:
    target = f"{repo}:{q.quant}"
    try:
        header = await header_over_http(hub, repo, q.first)
        setup = setup_from_args(cache_args(models, preset_args), cap.gpu_count + cap.gpu_unknown > 0)
        est = estimate(header, [q.size], setup.settings, projector_bytes=projector.size if projector else 0)
    except (HubError, FitInputError) as e:
        return FileFit(q.quant, "unknown", f"unknown ({e})")
    ev = eviction(target, models, models_max)
    v = verdict(est, cap)
    return FileFit(q.quant, v.verdict, summary(v, ev), est.total)
