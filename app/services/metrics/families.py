"""The metric families llamaherd exports: name, type, help and labels, in the order a scrape lists them.
docs/metrics.md documents them for operators; a test holds the two equal."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Family:
    name: str
    """The name a sample carries (a counter's ends in _total)."""
    kind: str
    help: str
    labels: tuple[str, ...]


FAMILIES = (
    Family("llamaherd_machine_up", "gauge", "1 when llamaherd reaches the machine (local, or its ssh link is up)",
           ("machine",)),
    Family("llamaherd_router_up", "gauge", "1 when the machine's router is running (or attached) and answering",
           ("machine",)),
    Family("llamaherd_model_loaded", "gauge", "1 when the model is loaded on the machine's router",
           ("machine", "model")),
    Family("llamaherd_model_status", "gauge",
           "Always 1; the status label is the model's status (loaded, loading, sleeping, unloaded, failed, ...)",
           ("machine", "model", "status")),
    Family("llamaherd_model_tokens_per_second", "gauge",
           "Generation speed over the last activity poll, for each loaded model", ("machine", "model")),
    Family("llamaherd_model_requests_processing", "gauge", "Requests a loaded model is processing now",
           ("machine", "model")),
    Family("llamaherd_model_not_answering", "gauge",
           "1 when a loaded model stopped answering its own endpoints within their bound (activity poll, probe)",
           ("machine", "model")),
    Family("llamaherd_model_failures_total", "counter",
           "Times the model failed (exited while loading or running) since this llamaherd began watching",
           ("machine", "model")),
    Family("llamaherd_host_memory_used_bytes", "gauge", "Memory in use on the machine (total - available)",
           ("machine",)),
    Family("llamaherd_host_gpu_memory_used_bytes", "gauge", "GPU memory in use, per GPU (nvidia-smi)",
           ("machine", "gpu")),
)  # fmt: skip
