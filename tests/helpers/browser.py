"""Headless Chromium for tests, Debian's own (`apt-get install chromium`; Playwright's browser download cannot be
reached here), driven through Playwright with `executable_path`, and kept to loopback: every host name but
127.0.0.1 fails to resolve, and any request elsewhere (textual-serve's page asks for a web font) is aborted.

The dashboard in the page is drawn by xterm.js on a canvas, so its text is not in the DOM; READ_SCREEN reads it
from the terminal's own buffer. TERMINAL_HOOK, run before the page's script, keeps every xterm Terminal the page
makes (textual-serve keeps its instance to itself): the bundle assigns the class to an exports object, and a
setter on Object.prototype wraps it in a subclass that records its instances.
"""

from __future__ import annotations

import shutil

CHROMIUM_NAMES = ("chromium", "chromium-browser")

CHROMIUM_ARGS = [
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-sandbox",  # root in CI: Chromium refuses its sandbox to root
]

TERMINAL_HOOK = """
(() => {
  const wrap = (v) => typeof v !== "function" ? v :
    class extends v { constructor(...a) { super(...a); (window.__terms = window.__terms || []).push(this); } };
  Object.defineProperty(Object.prototype, "Terminal", {
    configurable: true,
    set(v) {
      let kept = wrap(v);
      Object.defineProperty(this, "Terminal", {
        configurable: true, enumerable: true, get() { return kept; }, set(w) { kept = wrap(w); },
      });
    },
  });
})();
"""

READ_SCREEN = """() => {
  const t = (window.__terms || []).find(t => t.buffer && t.buffer.active && t.buffer.active.getLine);
  if (!t) return "";
  const b = t.buffer.active, out = [];
  for (let y = 0; y < t.rows; y++) {
    const line = b.getLine(b.viewportY + y);
    out.push(line ? line.translateToString(true) : "");
  }
  return out.join("\\n");
}"""


def find_chromium() -> str | None:
    for name in CHROMIUM_NAMES:
        if path := shutil.which(name):
            return path
    return None


def loopback_only(url: str) -> bool:
    return url.startswith(("http://127.0.0.1:", "ws://127.0.0.1:", "data:", "blob:"))
