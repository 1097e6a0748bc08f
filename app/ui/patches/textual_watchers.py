"""Kept only for app/ui/dashboard/screen.py's import, which another change is editing: the prune lives in
textual_internals.py with every other reach into Textual. Delete this once screen.py imports it from there."""

from app.ui.patches.textual_internals import prune_closed_watchers

__all__ = ["prune_closed_watchers"]
