"""A file's fit verdict in the hub screen and `search` takes the preset's `[*]` section (what the router gives a new
cache model) when no cache model shows its arguments yet: a bigger ctx-size there is a bigger need. The hub is the
stand-in; the machine is local, its preset read as llamaherd reads it (no router needed for this)."""

from __future__ import annotations

from app.config import load_config
from app.services.fleet import Fleet
from app.services.hub.hub_fit import section_args
from tests.helpers.herd import Herd, local_config
from tests.helpers.hub_standin import TINY_REPO, HubStandin


async def test_a_files_need_follows_the_presets_star_section(herd: Herd, hub: HubStandin) -> None:
    needs: dict[int, int] = {}
    for ctx in (64, 4096):
        preset = herd.root / f"star-{ctx}.ini"
        preset.write_text(f"[*]\nctx-size = {ctx}\n")
        herd.write_config(local_config("here", preset, hub=hub.url))
        fleet = Fleet(load_config(herd.config))
        try:
            choices = await fleet.hub_repo("here", TINY_REPO)
        finally:
            await fleet.close()
        fit = choices.fits["Q4_K_M"]
        assert fit.need, fit
        needs[ctx] = fit.need
    assert needs[4096] > needs[64], needs


def test_a_sections_keys_as_the_arguments_the_router_renders() -> None:
    args = section_args({"ctx-size": "8192", "kv-unified": "true", "mmap": "off", "parallel": "1"})
    assert args == ("--ctx-size", "8192", "--kv-unified", "--no-mmap", "--parallel", "1")
