"""llamaherd: a terminal dashboard for llama-server routers."""

import sys
import types

# `import httpx` also imports httpx's own command-line tool (click, rich and pygments: ~0.1 s of every headless
# command's start-up) unless that import fails, which httpx allows for. llamaherd never runs that tool.
sys.modules.setdefault("httpx._main", types.ModuleType("httpx._main"))
