"""Bounds and fixes that reach into Textual's and Rich's internals, each in its own module that names the library's
pinned version, the upstream issue, and a test that fails when an upgrade makes it a no-op.

May import: textual and rich only.
"""
