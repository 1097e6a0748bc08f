"""`llamaherd fit`, run as a user runs it, against a real router holding the tiny models."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import RouterFactory
from tests.helpers.router import RouterProc
from tests.integration.test_cli_router import herd, write_config


def test_fit_json_verdict_and_eviction(
    make_router: RouterFactory, tiny_models: dict[str, Path], tmp_path: Path
) -> None:
    router = make_router(models_max=1)
    cfg = write_config(tmp_path, router.url)
    r = herd(cfg, "fit", "alpha", "--json")
    assert r.returncode == 0, r.stderr
    [obj] = json.loads(r.stdout)
    assert obj["machine"] == "box" and obj["model"] == "alpha"
    est = obj["estimate_bytes"]
    assert set(est) == {"weights", "kv", "compute", "projector", "total"}
    assert est["weights"] == tiny_models["alpha"].stat().st_size
    assert est["kv"] == 256 * 2 * 64 * 2 * 2  # 256 cells × 2 layers × 64 wide × (K + V) × f16
    assert est["total"] == sum(v for k, v in est.items() if k != "total")
    assert obj["verdict"] == "fits" and obj["free_bytes"] > est["total"] and obj["evicts"] == []

    r = herd(cfg, "load", "box", "beta", "--wait")
    assert r.returncode == 0, r.stderr
    [obj] = json.loads(herd(cfg, "fit", "alpha", "box", "--ctx", "128", "--json").stdout)
    assert obj["evicts"] == ["beta"] and obj["n_ctx"] == 256  # 128 padded to 256 cells
    text = herd(cfg, "fit", "alpha")
    assert text.returncode == 0 and "box: alpha: fits · " in text.stdout and "evicts beta" in text.stdout


def test_fit_unknown_model_exits_1(router: RouterProc, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, router.url)
    r = herd(cfg, "fit", "nope", "--json")
    assert r.returncode == 1
    [obj] = json.loads(r.stdout)
    assert obj["verdict"] == "unknown" and "not among" in obj["reason"]
