"""Picking a picture to attach to a question: a directory tree showing folders and image files only."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DirectoryTree, Static

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".bmp", ".webp"})


class ImageTree(DirectoryTree):
    def filter_paths(self, paths: Iterable[Path]) -> Iterable[Path]:
        return [p for p in paths if not p.name.startswith(".") and (p.is_dir() or p.suffix.lower() in IMAGE_SUFFIXES)]


class ImagePicker(ModalScreen[Path | None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "Cancel", id="image_cancel")]

    DEFAULT_CSS = """
    ImagePicker { align: center middle; }
    ImagePicker #image-box { width: 80; max-width: 100%; height: 80%; border: round $accent; background: $surface; }
    ImagePicker #image-hint { height: auto; padding: 0 1; }
    ImagePicker #image-tree { height: 1fr; }
    """

    def __init__(self, start: Path) -> None:
        super().__init__()
        self.start = start

    def compose(self) -> ComposeResult:
        with Vertical(id="image-box"):
            yield Static("Enter on a picture attaches it (PNG, JPEG, GIF, BMP, WebP); Esc cancels", id="image-hint")
            yield ImageTree(self.start, id="image-tree")

    def on_mount(self) -> None:
        self.query_one("#image-box").border_title = "attach an image"
        self.query_one(ImageTree).focus()

    def on_directory_tree_file_selected(self, event: DirectoryTree.FileSelected) -> None:
        self.dismiss(event.path)
