"""Will a model fit on a machine, and what will its load evict: the memory estimate from the GGUF header, the
machine's capacity, the verdict before a load, and the whole check gathered from one machine.

May import: `files/` and everything below it; never `history/` or `activity/`.
"""
