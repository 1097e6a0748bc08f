"""Grouping a machine's files into models, and the preset section a found model gets."""

from __future__ import annotations

from app.services.core.host_types import FileInfo
from app.services.files.discovery import DiscoveredModel, classify, section_for, stem
from app.services.files.gguf_header import GgufHeader


def files(*specs: tuple[str, int]) -> list[FileInfo]:
    return [FileInfo(path, size, 0.0) for path, size in specs]


def by_name(models: tuple[DiscoveredModel, ...]) -> dict[str, DiscoveredModel]:
    return {m.name: m for m in models}


def test_stem() -> None:
    assert stem("/m/Qwen3-32B-Q4_K_M-00001-of-00003.gguf") == "Qwen3-32B-Q4_K_M"
    assert stem("/m/plain.gguf") == "plain"
    assert stem("/m/UPPER.GGUF") == "UPPER"


def test_top_level_files_are_named_after_the_file() -> None:
    found = classify(files(("/models/a.gguf", 10), ("/models/b.gguf", 20), ("/models/readme.md", 1)), "/models")
    assert [m.name for m in found.models] == ["a", "b"]
    assert found.models[0] == DiscoveredModel("a", "/models/a.gguf", ("/models/a.gguf",), 10)
    assert len(found.files) == 3  # every file stays listed


def test_a_model_in_its_own_directory_is_named_after_it_with_its_projector_and_draft() -> None:
    found = classify(
        files(
            ("/models/gemma3/gemma-3-4b-it-Q4_K_M.gguf", 2_000),
            ("/models/gemma3/mmproj-model-f16.gguf", 800),
            ("/models/qwen/Qwen3.6-27B-Q4_K_M.gguf", 16_000),
            ("/models/qwen/mtp-Qwen3.6-27B.gguf", 500),
        ),
        "/models",
    )
    models = by_name(found.models)
    assert set(models) == {"gemma3", "qwen"}
    gemma = models["gemma3"]
    assert gemma.path == "/models/gemma3/gemma-3-4b-it-Q4_K_M.gguf"
    assert gemma.mmproj == "/models/gemma3/mmproj-model-f16.gguf"
    assert gemma.draft is None and gemma.size == 2_000
    assert models["qwen"].draft == "/models/qwen/mtp-Qwen3.6-27B.gguf"
    assert models["qwen"].mmproj is None
    # projector and draft are not models, but stay among the files
    assert [f.path for f in found.projectors] == ["/models/gemma3/mmproj-model-f16.gguf"]
    assert [f.path for f in found.drafts] == ["/models/qwen/mtp-Qwen3.6-27B.gguf"]
    assert {f.path for f in found.files} >= {
        "/models/gemma3/mmproj-model-f16.gguf",
        "/models/qwen/mtp-Qwen3.6-27B.gguf",
    }


def test_several_quantisations_beside_one_projector_each_get_it() -> None:
    found = classify(
        files(
            ("/hf/gemma/gemma-Q4_K_M.gguf", 1),
            ("/hf/gemma/gemma-Q8_0.gguf", 2),
            ("/hf/gemma/mmproj-BF16.gguf", 3),
            ("/hf/gemma/mmproj-F16.gguf", 3),
        ),
        "/hf",
    )
    models = by_name(found.models)
    assert set(models) == {"gemma-Q4_K_M", "gemma-Q8_0"}  # two models in one directory: file names
    for m in models.values():
        assert m.mmproj == "/hf/gemma/mmproj-BF16.gguf"
        assert m.mmproj_candidates == ("/hf/gemma/mmproj-BF16.gguf", "/hf/gemma/mmproj-F16.gguf")


def test_split_files_are_one_model() -> None:
    found = classify(
        files(
            ("/m/big/Big-Q4-00002-of-00003.gguf", 100),
            ("/m/big/Big-Q4-00001-of-00003.gguf", 100),
            ("/m/big/Big-Q4-00003-of-00003.gguf", 50),
        ),
        "/m",
    )
    (model,) = found.models
    assert model.name == "big"
    assert model.path == "/m/big/Big-Q4-00001-of-00003.gguf"
    assert model.parts == tuple(f"/m/big/Big-Q4-0000{i}-of-00003.gguf" for i in (1, 2, 3))
    assert model.size == 250
    assert model.complete


def test_a_split_model_with_a_missing_part_is_incomplete() -> None:
    (model,) = classify(files(("/m/X-00001-of-00002.gguf", 1)), "/m").models
    assert model.name == "X" and not model.complete


def test_root_defaults_to_the_common_directory() -> None:
    found = classify(files(("/data/a/one.gguf", 1), ("/data/b/two.gguf", 1)))
    assert [m.name for m in found.models] == ["a", "b"]
    found = classify(files(("/data/one.gguf", 1), ("/data/two.gguf", 1)))
    assert [m.name for m in found.models] == ["one", "two"]


def test_deeper_directories_are_named_after_the_file() -> None:
    found = classify(
        files(("/cache/models--org--repo/snapshots/abc123/model-Q4_K_M.gguf", 1), ("/cache/x.gguf", 1)), "/cache"
    )
    assert {m.name for m in found.models} == {"model-Q4_K_M", "x"}


def test_equal_names_are_made_unique() -> None:
    found = classify(files(("/m/a/deep/m.gguf", 1), ("/m/b/deep/m.gguf", 1)), "/m")
    assert [m.name for m in found.models] == ["m", "m-2"]


def test_only_projectors_or_drafts_give_no_model() -> None:
    found = classify(files(("/m/x/mmproj.gguf", 1), ("/m/x/dflash-x.gguf", 1), ("/m/x/DSPARK-y.gguf", 1)), "/m")
    assert found.models == ()
    assert len(found.projectors) == 1 and len(found.drafts) == 2


def test_section_for_a_plain_model() -> None:
    model = DiscoveredModel("a", "/m/a.gguf", ("/m/a.gguf",), 1)
    assert section_for(model, None) == {"model": "/m/a.gguf", "parallel": "1"}
    assert section_for(model, GgufHeader(arch="llama", nextn_predict_layers=0)) == {
        "model": "/m/a.gguf",
        "parallel": "1",
    }


def test_section_for_a_model_with_mtp_layers_projector_and_draft() -> None:
    model = DiscoveredModel("q", "/m/q/q.gguf", ("/m/q/q.gguf",), 1, mmproj="/m/q/mmproj.gguf", draft="/m/q/mtp-q.gguf")
    assert section_for(model, GgufHeader(arch="qwen35", nextn_predict_layers=1)) == {
        "model": "/m/q/q.gguf",
        "mmproj": "/m/q/mmproj.gguf",
        "model-draft": "/m/q/mtp-q.gguf",
        "spec-type": "draft-mtp",
        "parallel": "1",
    }
