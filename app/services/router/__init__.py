"""Talking to one router over HTTP: its REST calls, its event stream (`/models/sse`, with `GET /models` as the
safety net), its JSON parsed into typed values, the hand-written HTTP/1.1 fast paths (`/health`, `/metrics`,
`/models`), the one timer that asks every followed router's `/health` in its stream's silences (health_beat.py),
how its model list is kept from what it says, and a load awaited until the model is in memory.

May import: `core/`. Knows nothing of machines, transports or ssh: a router is a URL and a key here.
"""
