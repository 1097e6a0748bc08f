"""Widgets that know nothing of routers or models: a virtual table that draws only the lines on screen, its look,
cells and keyed rows, sizes that do not jitter, a scroll extent without a layout pass, border titles set once.

May import: `text/`, `patches/`, and the service layer's `core/`.
"""
