"""Every reach into a UI library's internals, one module per library, each naming the version pinned in
pyproject.toml, the upstream issue it works around, and the test that fails when an upgrade makes it a no-op:
textual_internals.py and rich_internals.py. toast_bound.py is the notification bound's policy (plain Python) that
the Textual side applies.

May import: textual and rich only.
"""
