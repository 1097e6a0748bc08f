"""The dashboard in a real browser (issue 37): headless Chromium opens `llamaherd serve` with the token, the page
shows the dashboard (its text read back from the terminal emulator), a key pressed in the browser loads a model on
a real router (checked at the router), and the token stays out of the address bar."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers.browser import CHROMIUM_ARGS, READ_SCREEN, TERMINAL_HOOK, find_chromium, loopback_only
from tests.helpers.herd import Herd
from tests.helpers.needs import missing
from tests.helpers.serve import Served, start_serve
from tests.helpers.wait import wait_for_sync


@pytest.fixture(scope="session")
def chromium() -> str:
    path = find_chromium()
    if path is None:
        missing("Debian's chromium is not installed (apt-get install --no-install-recommends chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing("Playwright's Python package is not installed (pip install -e '.[test]')")
    return path


@pytest.fixture
def served(herd: Herd) -> Iterator[Served]:
    assert herd.run("start", "here").returncode == 0
    s = start_serve(herd)
    yield s
    s.stop()


def router_status(herd: Herd, model: str) -> str:
    rec = herd.record()
    assert rec is not None
    key = (herd.state_home / "llamaherd" / "routers" / "default" / "api.key").read_text().strip()
    r = httpx.get(f"http://127.0.0.1:{rec['port']}/models", headers={"Authorization": f"Bearer {key}"}, timeout=10)
    return str(next(m["status"]["value"] for m in r.json()["data"] if m["id"] == model))


def test_a_key_pressed_in_the_browser_loads_a_model_on_the_router(
    chromium: str, herd: Herd, served: Served, tmp_path: Path
) -> None:
    from playwright.sync_api import Page, Route, sync_playwright

    def screen(page: Page) -> str:
        return str(page.evaluate(READ_SCREEN))

    def keep_local(route: Route) -> None:
        if loopback_only(route.request.url):
            route.continue_()
        else:
            route.abort()

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            tabs = browser.new_context(viewport={"width": 1400, "height": 800})
            page = tabs.new_page()
            page.route("**/*", keep_local)
            page.add_init_script(TERMINAL_HOOK)
            page.goto(f"{served.base}/?token={served.token}")
            assert page.url == served.base + "/"  # redirected: the token is not in the address bar
            wait_for_sync(lambda: all(w in screen(page) for w in ("llamaherd", "alpha", "running")), 60, step=0.2,
                          what="the dashboard in the page", explain=lambda: screen(page))  # fmt: skip
            shown = screen(page)
            assert "models: here" in shown and "beta" in shown
            assert served.session_pids() == []  # the tab's dashboard runs in serve, over its one fleet
            assert router_status(herd, "alpha") == "unloaded"
            page.focus(".xterm-helper-textarea")
            page.keyboard.press("l")  # the cursor is on alpha, the first row
            wait_for_sync(lambda: router_status(herd, "alpha") == "loaded", 60, step=0.2,
                          what="alpha loaded at the router", explain=lambda: screen(page))  # fmt: skip
            wait_for_sync(lambda: "● loaded" in screen(page) or "1/3 models running" in screen(page), 30,
                          step=0.2, what="the load on the page", explain=lambda: screen(page))  # fmt: skip
            # SERVE_SCREENSHOT=screenshots/serve.png keeps the picture the README shows
            shot = Path(os.environ.get("SERVE_SCREENSHOT") or tmp_path / "serve.png")
            page.bring_to_front()
            page.evaluate("() => { document.activeElement.blur(); window.scrollTo(0, 0); }")  # focus scrolled it
            page.wait_for_timeout(500)  # a frame or two of the page's own drawing, not a wait for the app
            page.screenshot(path=str(shot))
            assert shot.stat().st_size > 10_000
            # a second tab: a dashboard of its own (its own cursor and screens) over the same fleet
            second = tabs.new_page()
            second.route("**/*", keep_local)
            second.add_init_script(TERMINAL_HOOK)
            second.goto(served.base + "/")  # the cookie is enough now
            wait_for_sync(lambda: "1/3 models running" in screen(second), 60, step=0.2,
                          what="the second tab showing the load", explain=lambda: screen(second))  # fmt: skip
            assert served.session_pids() == []
            cookies: list[Any] = tabs.cookies()
            assert [(c["name"], c["httpOnly"], c["sameSite"]) for c in cookies] == [("llamaherd_serve", True, "Strict")]
        finally:
            browser.close()
    assert served.proc.poll() is None and served.sample("llamaherd_model_loaded", machine="here", model="alpha") == 1
