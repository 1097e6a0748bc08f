"""Router log lines: parsed into time, level, source and text, child lines attributed to their model; the bounded,
packed scrollback; the window of raw lines parsed between two flushes of a follower.

May import: `core/`.
"""
