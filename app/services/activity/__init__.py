"""What a loaded model is doing: its child's `/metrics` and `/slots` parsed into rates, and the poll that asks every
loaded model through its router.

May import: `files/` and everything below it; never `history/` or `fit/`.
"""
