"""The ask pane's image picker (Ctrl+O): a tree of folders and pictures only, Enter attaches one, and the picture
goes with the next question; a model without vision never opens it. The fleet is a recorder of what the pane sends
(a real router's answers are in test_ask_pane.py)."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from pathlib import Path

import pytest
from textual.app import App
from textual.widgets import Input

from app.services.ask.answer import Answer, Piece
from app.services.ask.conversation import Conversation
from app.services.ask.figures import AnswerFigures
from app.ui.screens.ask import AskScreen
from app.ui.screens.ask_image_picker import ImagePicker, ImageTree
from tests.helpers.screen import screen_text
from tests.helpers.wait import wait_for

# The smallest PNG a reader recognises by its first bytes (signature and the IHDR chunk's start).
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"\x00" * 32


class AskRecorder:
    """What the pane hands to Fleet.ask, one conversation per question; each answered with one word."""

    def __init__(self) -> None:
        self.sent: list[Conversation] = []

    async def ask(
        self, machine: str, conv: Conversation, vision: bool | None, max_tokens: int, load_first: bool = False
    ) -> AsyncGenerator[Piece | Answer, None]:
        self.sent.append(Conversation(conv.model, conv.system, list(conv.turns)))
        yield Piece("seen", time.monotonic())
        yield Answer("seen", AnswerFigures(None, None, None, None), "stop")


class Host(App[None]):
    def __init__(self, fleet: AskRecorder, vision: bool | None) -> None:
        super().__init__()
        self.fleet, self.vision = fleet, vision

    def on_mount(self) -> None:
        self.push_screen(AskScreen(self.fleet, "box", "qwen3-vl", self.vision))


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder of its own (the picker starts there): a picture, a text file and a hidden picture."""
    (tmp_path / "cat.png").write_bytes(PNG)
    (tmp_path / "notes.txt").write_text("not a picture")
    (tmp_path / ".secret.png").write_bytes(PNG)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


async def test_a_picture_picked_in_the_tree_goes_with_the_next_question(home: Path) -> None:
    fleet = AskRecorder()
    app = Host(fleet, vision=None)  # not known: offered, not refused
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(lambda: isinstance(app.screen, AskScreen), pilot=pilot)
        screen = app.screen
        assert isinstance(screen, AskScreen)
        ask: AskScreen = screen  # typed for the lambdas below
        await pilot.press("ctrl+o")
        await wait_for(lambda: isinstance(app.screen, ImagePicker), pilot=pilot, what="the picker")
        tree = app.screen.query_one(ImageTree)
        await wait_for(lambda: len(tree.root.children) > 0, pilot=pilot, what="the home folder listed")
        # Pictures and folders only, no hidden file: the text file and .secret.png are not offered.
        assert [str(node.label) for node in tree.root.children] == ["cat.png"]
        tree.move_cursor(tree.root.children[0])
        await pilot.press("enter")
        await wait_for(lambda: app.screen is ask and ask.attached, pilot=pilot, what="cat.png attached")
        assert "attached: cat.png" in screen_text(app)
        ask.query_one(Input).value = "what is this?"
        await pilot.press("enter")
        await wait_for(lambda: fleet.sent and not ask.answering, pilot=pilot, what="the question answered")
        question = fleet.sent[0].turns[-1]
        assert question.text == "what is this?"
        assert [(im.name, im.mime, im.data) for im in question.images] == [("cat.png", "image/png", PNG)]
        assert not ask.attached  # sent once: the next question goes without it


async def test_a_model_without_vision_never_opens_the_picker(home: Path) -> None:
    app = Host(AskRecorder(), vision=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(lambda: isinstance(app.screen, AskScreen), pilot=pilot)
        await pilot.press("ctrl+o")
        await wait_for(lambda: "has no vision" in screen_text(app), pilot=pilot, what="the refusal said")
        assert isinstance(app.screen, AskScreen)


async def test_escape_in_the_picker_attaches_nothing(home: Path) -> None:
    app = Host(AskRecorder(), vision=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(lambda: isinstance(app.screen, AskScreen), pilot=pilot)
        ask = app.screen
        assert isinstance(ask, AskScreen)
        await pilot.press("ctrl+o")
        await wait_for(lambda: isinstance(app.screen, ImagePicker), pilot=pilot, what="the picker")
        await pilot.press("escape")
        await wait_for(lambda: app.screen is ask, pilot=pilot, what="back in the pane")
        assert ask.attached == []
