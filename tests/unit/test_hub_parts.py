"""The hub's pure parts: quant tags and grouping, the cause read from the download child's log lines (as this
llama-server build wrote them against the hub stand-in), the progress meter, the hub settings a router gets and
the record's comparison, the cache folder from a router's environment, and the downloading row's status cell."""

from __future__ import annotations

import pytest

from app.config import MachineConfig
from app.services.core.download_meter import DownloadMeters, ProgressMeter
from app.services.core.errors import LifecycleError
from app.services.core.fleet_events import ModelEvent, ModelsUpdated
from app.services.core.router_types import DownloadProgressEvent, ModelInfo, ModelState
from app.services.hub.cache_files import cache_from_environ, parse_environ
from app.services.hub.download_log import download_cause
from app.services.hub.hub_api import RepoFile
from app.services.hub.pull import BadSpec, landed, parse_spec
from app.services.hub.repo_files import find_quant, group, quant_of
from app.services.lifecycle.hub_env import hub_difference, hub_env
from app.services.machine.machine import Machine
from app.ui.text import format as fmt
from app.ui.text.glyphs import ASCII
from tests.helpers.wait import wait_for

NAME = "tiny/Tiny-GGUF:Q4_K_M"
SPAWN = f"0.00.596.651 I srv          load: spawning server instance with name={NAME} on port 39705"


def test_quant_of_follows_the_routers_naming() -> None:
    assert quant_of("Qwen3-8B-Q4_K_M.gguf") == ("Q4_K_M", 1, 1)
    assert quant_of("sub/model.q8_0.gguf") == ("Q8_0", 1, 1)
    assert quant_of("big-Q4_K_M-00002-of-00003.gguf") == ("Q4_K_M", 2, 3)
    assert quant_of("model.gguf")[0] == ""


def test_group_shards_as_one_projector_apart_smallest_first() -> None:
    files = [
        RepoFile("m-Q8_0.gguf", 800), RepoFile("m-Q4_K_M-00002-of-00002.gguf", 200),
        RepoFile("m-Q4_K_M-00001-of-00002.gguf", 250), RepoFile("mmproj-m-F16.gguf", 90),
        RepoFile("README.md", 5), RepoFile("mtp-m-Q8_0.gguf", 30), RepoFile("plain.gguf", 7),
    ]  # fmt: skip
    listing = group("o/r", files)
    assert [(q.quant, q.paths, q.size) for q in listing.quants] == [
        ("Q4_K_M", ("m-Q4_K_M-00001-of-00002.gguf", "m-Q4_K_M-00002-of-00002.gguf"), 450),
        ("Q8_0", ("m-Q8_0.gguf",), 800),
    ]
    assert [v.first for v in listing.vision] == ["mmproj-m-F16.gguf"]
    assert listing.other_gguf == ("plain.gguf",)
    assert find_quant(listing, "q8_0") is listing.quants[1]


def test_spec_and_landed() -> None:
    assert parse_spec("o/r:q4_k_m") == ("o/r", "Q4_K_M")
    assert parse_spec("o/r") == ("o/r", None)
    for bad in ("o", "o/r/x", "o/../r", "o/r:Q4 K", ""):
        with pytest.raises(BadSpec):
            parse_spec(bad)
    models = [ModelInfo("o/r:Q4_K_M", ModelState.UNLOADED, source="cache"),
              ModelInfo("o/r:Q8_0", ModelState.DOWNLOADING, source="cache")]  # fmt: skip
    assert landed(models, "o/r", "Q4_K_M") is models[0]
    assert landed(models, "o/r", "Q8_0") is None  # still a placeholder
    assert landed(models, "o/r", None) is models[0]


def lines(*child: str, router: tuple[str, ...] = ()) -> list[str]:
    return ["0.00.012 I srv  llama_server: listening", SPAWN, *router, *(f"[39705] 0.00.0{i}0.000 {t}"
            for i, t in enumerate(child))]  # fmt: skip


CASES = {
    "E get_repo_commit: error: GET failed (404): Repository not found":
        "http://hub has no repo tiny/Tiny-GGUF (404 from the hub, as box asked it)",
    "E get_repo_commit: error: HTTPLIB failed: Could not establish connection":
        "http://hub cannot be reached from box (Could not establish connection)",
    "E get_repo_commit: error: failed to write /c/refs/main":
        "box could not resolve tiny/Tiny-GGUF's commit on http://hub: failed to write /c/refs/main",
    "E common_pull_file: error writing to file: /c/blobs/abc.downloadInProgress":
        "box could not write the download (disk full or not writable): /c/blobs/abc.downloadInProgress",
}  # fmt: skip


@pytest.mark.parametrize("line", list(CASES))
def test_cause_from_the_childs_lines(line: str) -> None:
    assert download_cause(lines(line), NAME, "http://hub", "box").cause == CASES[line]


def test_cause_missing_quant_lists_what_the_repo_has() -> None:
    child = ("E common_download_get_hf_plan: no GGUF files found in repository tiny/Tiny-GGUF",
             "I Available GGUF files:", "I  - tiny-Q8_0.gguf", "I  - tiny-Q4_0.gguf")  # fmt: skip
    other = download_cause(lines(*child), "tiny/Tiny-GGUF:Q5_K_S", "h", "box")
    assert other.cause == ""  # the spawn line names another model: these lines are not this pull's
    raw = [ln.replace(NAME, "tiny/Tiny-GGUF:Q5_K_S") for ln in lines(*child)]
    cause = download_cause(raw, "tiny/Tiny-GGUF:Q5_K_S", "h", "box").cause
    assert cause == "tiny/Tiny-GGUF has no Q5_K_S file (it has: tiny-Q4_0.gguf, tiny-Q8_0.gguf)"


def test_cause_cut_on_every_try_and_cancel() -> None:
    cut = lines(
        "E common_pull_file: download failed: Failed to read connection (status: -1)",
        "W common_download_file_single_online: retrying after 2 seconds...",
        "E common_download_file_single_online: download failed after 3 attempts",
    )
    assert download_cause(cut, NAME, "h", "box").cause == (
        "the hub's file broke off on every try (3 attempts: Failed to read connection (status: -1))"
    )
    cancel = lines(
        "E common_pull_file: download failed: Connection handling canceled (status: -1)",
        router=(f"0.02.289 I srv        unload: cancelling download for model name={NAME}",),
    )
    assert download_cause(cancel, NAME, "h", "box").cause.startswith("cancelled on request")
    assert download_cause(["nothing"], NAME, "h", "box").cause == ""


def test_meter_rate_eta_and_window() -> None:
    m = ProgressMeter("x", expected_total=1000)
    assert m.update(0, 500, 10.0).rate is None
    p = m.update(100, 500, 11.0)
    assert (p.total, p.rate, p.eta) == (1000, 100.0, 9.0)
    p = m.update(700, 1000, 20.0)  # the window keeps the last RATE_WINDOW seconds and at least two samples
    assert p.rate == pytest.approx(600 / 9) and p.fraction == 0.7
    meters = DownloadMeters()
    meters.update("a", 10, 100, now=1.0)
    assert meters.update("a", 60, 100, now=2.0).rate == 50.0
    meters.forget("a")
    assert meters.update("a", 70, 100, now=3.0).rate is None


def test_download_badge() -> None:
    meters = DownloadMeters()
    meters.update("m", 0, 4 << 20, now=0.0)
    d = meters.update("m", 1 << 20, 4 << 20, now=1.0)
    text = fmt.badge(ModelInfo("m", ModelState.DOWNLOADING, download=d), ASCII)[0]
    assert text.startswith("v downloading  25% ")
    assert text.endswith(" 1.0M/4.0M  1.0M/s  0:03")  # fixed widths: a figure that widens moves no column
    d = meters.update("m", (3 << 20) + (1 << 19), 4 << 20, now=1.5)
    later = fmt.badge(ModelInfo("m", ModelState.DOWNLOADING, download=d), ASCII)[0]
    assert len(later) == len(text), (later, text)
    assert fmt.badge(ModelInfo("m", ModelState.DOWNLOADING), ASCII)[0].endswith("downloading")


def machine(**kw: object) -> MachineConfig:
    return MachineConfig(name="box", **kw)  # type: ignore[arg-type]


def test_hub_env_and_the_records_comparison() -> None:
    plain = hub_env(machine(), None, None)
    assert (plain.env, plain.token, plain.applied) == ({}, None, "hub=https://huggingface.co cache=- token=-")
    full = hub_env(machine(hub="http://mirror:8080/", hub_token_env="T"), " tok-123 ", "/c")
    assert full.env == {"MODEL_ENDPOINT": "http://mirror:8080", "LLAMA_CACHE": "/c"}
    assert full.token == "tok-123" and "tok-123" not in full.applied and "token=set" in full.applied
    with pytest.raises(LifecycleError, match=r"\$T, which is not set here"):
        hub_env(machine(hub_token_env="T"), None, None)
    with pytest.raises(LifecycleError, match="not a usable hub token") as e:
        hub_env(machine(hub_token_env="T"), "two words", None)
    assert "two words" not in str(e.value)
    m = machine(hub="http://mirror:8080", hub_cache="/c")
    assert hub_difference(m, "hub=http://mirror:8080 cache=/c token=-", "/c") == ""
    assert "was not started with its hub settings" in hub_difference(m, None, "/c")
    assert hub_difference(machine(), None, None) == ""  # nothing asked: the router's defaults are the settings
    assert "the settings now say hub=http://mirror:8080" in hub_difference(m, plain.applied, "/c")


def test_cache_folder_from_a_routers_environment() -> None:
    env = parse_environ(b"HOME=/home/u\0HF_HOME=/hf\0junk\0")
    assert env == {"HOME": "/home/u", "HF_HOME": "/hf"}
    assert cache_from_environ(env) == "/hf/hub"
    assert cache_from_environ({**env, "LLAMA_CACHE": "/lc"}) == "/lc"
    assert cache_from_environ({"HOME": "/home/u"}) == "/home/u/.cache/huggingface/hub"
    assert cache_from_environ({}) is None


def test_cause_a_gated_repo_and_a_token_the_router_would_not_send() -> None:
    refused = "E get_repo_commit: error: GET failed (401): Invalid credentials in Authorization header"
    cause = download_cause(lines(refused), NAME, "h", "box").cause
    assert (
        cause
        == "h refused tiny/Tiny-GGUF (401: gated or private; the machine's hub_token_env gives the router a token)"
    )
    shaped = download_cause(lines("W api_get: invalid token, authentication disabled", refused), NAME, "h", "box")
    assert "the router's token was not sent: llama-server took it for invalid" in shaped.cause
    assert len(shaped.evidence) == 2


async def test_a_downloading_rows_figures_are_told_within_their_deadline_together_and_the_newest_last() -> None:
    told: list[object] = []
    m = Machine(MachineConfig(name="box", url="http://127.0.0.1:9"), emit=told.append)
    try:
        for done in (10, 20, 30):
            await m._apply(DownloadProgressEvent(model=NAME, done=done, total=100))
        rows = [e for e in told if isinstance(e, ModelsUpdated)]
        assert [r.models[0].download.done for r in rows] == [10]  # type: ignore[union-attr]
        assert len([e for e in told if isinstance(e, ModelEvent)]) == 3  # every event still goes out as it came
        await wait_for(lambda: len([e for e in told if isinstance(e, ModelsUpdated)]) == 2, 1.0, what="the latest")
        last = [e for e in told if isinstance(e, ModelsUpdated)][-1]
        assert isinstance(last, ModelsUpdated) and last.models[0].download is not None
        assert last.models[0].download.done == 30 and m.models[NAME].state is ModelState.DOWNLOADING
    finally:
        await m.close()
