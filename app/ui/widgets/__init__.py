"""Widgets that know nothing of routers or models: a virtual table that draws only the lines on screen, its look,
cells and keyed rows, sizes that do not jitter, the column plan (widths from what a column can hold, the least
important dropped first), a scroll extent without a layout pass, border titles set once, lines wrapped into rows
counted without rendering them, scrollbar thumbs of whole cells, a log for text that streams in.

May import: `text/`, `patches/`, and the service layer's `core/`.
"""
