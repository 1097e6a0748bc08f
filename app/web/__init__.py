"""`llamaherd serve`: the dashboard in a browser (each tab a dashboard of its own: inside this process over its one
Fleet by default, shared.py with session_driver.py; or `--sessions process`, sessions.py, textual-serve running
`llamaherd dashboard` per tab), the fleet's `/metrics` beside it (services/metrics/), and the token in front of
both (token.py, auth.py).

May import: `app.ui` (shared sessions run its HerdApp), `app.services` and below, aiohttp, textual-serve and
prometheus_client. Textual is imported only when a shared session can start: `--metrics-only` loads no UI.
"""
