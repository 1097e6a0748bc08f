"""The fit verdict against a real llama-server router through the real Fleet: the estimate is made from the
model's own header on this machine, in a worker, and the palette's Load entry carries it."""

from __future__ import annotations

import os

from app.config import Config, MachineConfig
from app.services.fit.capacity import setup_from_args
from app.services.fleet import Fleet
from app.ui.app import make_app
from tests.helpers.router import RouterProc
from tests.helpers.screen import screen_text
from tests.helpers.wait import wait_for

SIZE = (120, 40)


async def test_palette_load_entry_carries_the_real_estimate(router: RouterProc) -> None:
    cfg = Config(machines=(MachineConfig(name="box", url=router.url),))
    app = make_app(cfg, Fleet(cfg))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: "alpha" in app.dashboard.model_table.rows_now, timeout=15, pilot=pilot)
        await wait_for(lambda: app.state.get("box").stats is not None, timeout=15, pilot=pilot)
        await pilot.press("ctrl+p")
        await pilot.press(*"Load alpha on box")

        def flat() -> str:
            return " ".join(screen_text(app).split())  # the help line wraps

        await wait_for(lambda: "estimate: weights" in flat(), timeout=15, pilot=pilot)
        text = flat()
        assert "fits · needs" in text and "free RAM" in text, text
        st = app.state.get("box")
        alpha = next(m for m in st.models if m.id == "alpha")
        known = app.dashboard.fit.known("box", alpha)
        assert known is not None and known.estimate is not None
        # the weights are the file's size: the header was read from the file the router loads
        path = setup_from_args(alpha.args, has_gpu=False).model_path
        assert known.estimate.weights.bytes == os.path.getsize(path) and known.estimate.kv.bytes > 0
