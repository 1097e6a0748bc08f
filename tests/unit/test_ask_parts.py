"""The ask service's pure parts: chunks read, figures kept, conversations built, images recognised."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.services.ask.chunks import read_chunk
from app.services.ask.conversation import Conversation, Turn
from app.services.ask.figures import FigureKeeper
from app.services.ask.images import AttachedImage, ImageRefused, kind_of, read_image
from app.services.ask.readiness import NotAskable, readiness
from app.services.ask.vision import refuse_images, vision_of
from app.services.core.router_types import ModelInfo, ModelState

LAST = (
    '{"choices":[],"usage":{"completion_tokens":8,"prompt_tokens":24,"total_tokens":32},'
    '"timings":{"prompt_n":24,"prompt_ms":2.3,"predicted_n":8,"predicted_ms":142.5,"predicted_per_second":49.1}}'
)


def test_chunks_as_this_server_sends_them() -> None:
    assert read_chunk('{"choices":[{"delta":{"role":"assistant","content":null}}]}').text == ""
    assert read_chunk('{"choices":[{"delta":{"content":"5"}}]}').text == "5"
    assert read_chunk('{"choices":[{"finish_reason":"length","delta":{}}]}').finish_reason == "length"
    f = read_chunk(LAST)
    assert (f.prompt_tokens, f.completion_tokens, f.predicted_per_second) == (24, 8, 49.1)
    assert read_chunk('{"error":{"message":"boom"}}').error == "boom"


@pytest.mark.parametrize(
    "hostile", ["", "[", "[1]", '{"choices":"x"}', '{"choices":[{"delta":{"content":7}}]}',
                '{"usage":{"prompt_tokens":-1}}', '{"timings":{"predicted_per_second":"NaN"}}', "[" * 100_000],
)  # fmt: skip
def test_hostile_chunks_are_ignored(hostile: str) -> None:
    f = read_chunk(hostile)
    assert f.text == "" and f.prompt_tokens is None and f.predicted_per_second is None


def test_figures_prefer_the_servers_and_count_here_otherwise() -> None:
    k = FigureKeeper(sent_at=10.0)
    k.saw(read_chunk('{"choices":[{"delta":{"content":"a"}}]}'), 10.05)
    k.saw(read_chunk('{"choices":[{"delta":{"content":"b"}}]}'), 10.15)
    here = k.figures()
    assert here.ttft_ms == pytest.approx(50) and here.tokens_per_s == pytest.approx(10)
    assert here.completion_tokens == 2 and not here.from_server and "counted here" in here.line()
    k.saw(read_chunk(LAST), 10.2)
    f = k.figures()
    assert f.from_server and f.tokens_per_s == 49.1 and f.prompt_tokens == 24 and f.completion_tokens == 8
    assert set(f.as_json()) == {"ttft_ms", "tokens_per_s", "prompt_tokens", "completion_tokens"}


PNG = AttachedImage("cat.png", "image/png", b"\x89PNG\r\n\x1a\n")


def test_an_earlier_image_is_folded_into_words_unless_the_model_sees() -> None:
    c = Conversation("m", system="be brief", turns=[Turn("user", "look", (PNG,)), Turn("assistant", "ok"),
                                                    Turn("user", "and this", (PNG,))])  # fmt: skip
    blind = c.messages(None)
    assert blind[0] == {"role": "system", "content": "be brief"}
    assert isinstance(blind[1]["content"], str) and "cat.png" in blind[1]["content"]
    assert blind[3]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    seeing = c.messages(True)
    assert seeing[1]["content"][1]["type"] == "image_url"
    json.dumps(seeing)  # the whole conversation is one JSON body


def test_vision_three_states_and_the_refusal() -> None:
    loaded_text = ModelInfo("m", ModelState.LOADED, input_modalities=("text",))
    loaded_image = ModelInfo("m", ModelState.LOADED, input_modalities=("text", "image"))
    never = ModelInfo("m", ModelState.UNLOADED, input_modalities=("text", "image"))  # the offline guess: not known
    assert (vision_of(loaded_text), vision_of(loaded_image), vision_of(never)) == (False, True, None)
    with pytest.raises(ImageRefused, match="m has no vision"):
        refuse_images("m", False, 1)
    refuse_images("m", None, 1)  # unknown is offered
    refuse_images("m", False, 0)


def test_readiness_resolves_aliases_refuses_projectors_and_says_the_eviction() -> None:
    models = [
        ModelInfo("big", ModelState.LOADED),
        ModelInfo("small", ModelState.UNLOADED, aliases=("s",)),
        ModelInfo("vis-mmproj-f16", ModelState.UNLOADED),
    ]
    r = readiness("s", models, 1)
    assert r.model == "small" and r.needs_load and r.evicts == "evicts big"
    assert "evicts big" in r.load_question("box")
    assert not readiness("big", models, 1).needs_load
    with pytest.raises(NotAskable, match="projector"):
        readiness("vis-mmproj-f16", models, 1)
    with pytest.raises(NotAskable, match="no model named"):
        readiness("nope", models, 1)


def test_images_by_their_bytes_within_the_bound(tmp_path: Path) -> None:
    assert kind_of(b"\xff\xd8\xff\xe0") == "image/jpeg" and kind_of(b"RIFF\0\0\0\0WEBPVP8 ") == "image/webp"
    assert kind_of(b"%PDF-1.4") is None
    p = tmp_path / "x.gif"
    p.write_bytes(b"GIF89a" + bytes(100))
    assert read_image(p).mime == "image/gif"
    with pytest.raises(ImageRefused, match="bigger than"):
        read_image(p, limit=50)
    with pytest.raises(ImageRefused, match="cannot read"):
        read_image(tmp_path / "missing.png")
