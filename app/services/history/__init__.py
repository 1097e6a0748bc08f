"""What changed and why: the transition history (SQLite, 0600, bounded), fleet events turned into rows with reasons,
reasons read back from a managed router's log (in-process for a local log), and each model's last change.

May import: `files/` and everything below it; never `fit/` or `activity/`.
"""
