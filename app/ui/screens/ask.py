"""The ask pane: a short conversation with one model, its reply streamed in as plain text (never markup, control
characters made visible), then time to first token, tokens/s and token counts. Esc stops an answer mid-way (the
stream is closed, so the server stops generating) and, with no answer running, closes the pane. Ctrl+O attaches
a picture (sent as a data URI; refused at once for a model that said it has no vision).

Everything goes through the fleet's `ask` (app/services/ask); this screen only keeps the turns and shows them.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import ClassVar, Protocol, runtime_checkable

from rich.cells import cell_len
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from app.services.ask.answer import DEFAULT_MAX_TOKENS, Answer, Piece
from app.services.ask.conversation import Conversation, Turn
from app.services.ask.images import AttachedImage, ImageRefused, read_image
from app.services.ask.vision import refuse_images
from app.services.core.errors import HerdError
from app.services.core.textsafe import visible
from app.ui.screens.ask_image_picker import ImagePicker
from app.ui.text.format import BAD, DIM
from app.ui.text.plain_text import plain
from app.ui.widgets.reply_log import ReplyLog

# Bound: lines the reply pane keeps (a long conversation scrolls away at the top).
REPLY_LINES = 5000
VISION_WORDS = {True: "takes images", False: "no vision", None: "vision not known yet"}


@runtime_checkable
class AskFleet(Protocol):
    """What the pane needs of app.services.fleet.Fleet."""

    def ask(
        self, machine: str, conv: Conversation, vision: bool | None, max_tokens: int, load_first: bool = False
    ) -> AsyncGenerator[Piece | Answer, None]: ...


class AskScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "stop_or_close", "Stop / close", id="ask_stop"),
        Binding("ctrl+o", "attach", "Attach image", id="ask_attach"),
    ]

    DEFAULT_CSS = """
    AskScreen { align: center middle; background: $background; }
    AskScreen #ask-box { width: 90%; height: 85%; border: round $accent; background: $surface; padding: 0 1; }
    AskScreen #ask-head { height: auto; }
    AskScreen #ask-reply { height: 1fr; }
    AskScreen #ask-figures { height: auto; min-height: 1; }
    AskScreen #ask-input { height: 3; }
    """

    def __init__(
        self, fleet: AskFleet, machine: str, model: str, vision: bool | None, load_first: bool = False
    ) -> None:
        super().__init__()
        self.fleet = fleet
        self.machine = machine
        self.vision = vision
        self.load_first = load_first
        self.conv = Conversation(model)
        self.attached: list[AttachedImage] = []
        self.answering = False
        self.max_tokens = DEFAULT_MAX_TOKENS
        self.shown: list[tuple[float, float]] = []
        """(piece arrived, piece on screen) clock readings: the bench reads them."""
        self._lines: dict[str, tuple[str, str]] = {}
        """What the head and figures lines say now (text, style): a line set again to the same is left alone."""

    def compose(self) -> ComposeResult:
        with Vertical(id="ask-box"):
            yield Static(id="ask-head")
            yield ReplyLog(max_lines=REPLY_LINES, id="ask-reply")
            yield Static(id="ask-figures")
            yield Input(placeholder="Ask… (Enter sends, Esc stops / closes, Ctrl+O attaches an image)", id="ask-input")

    def on_mount(self) -> None:
        box = self.query_one("#ask-box")
        box.border_title = visible(f"ask {self.conv.model} on {self.machine}")
        self._head()
        self.query_one(Input).focus()

    def _head(self) -> None:
        words = VISION_WORDS[self.vision]
        pics = f" · attached: {', '.join(im.name for im in self.attached)}" if self.attached else ""
        load = " · not loaded: the first question loads it" if self.load_first else ""
        self._set_line("#ask-head", f"{self.conv.model} ({words}){load}{pics}", DIM)

    def _say(self, text: str, style: str = DIM) -> None:
        self._set_line("#ask-figures", text, style)

    def _set_line(self, which: str, text: str, style: str) -> None:
        """Set a one-line Static; the screen is laid out again only when the line may take another height.

        A layout of the pane costs a frame's work: at the start and end of every answer it held back the first
        piece's paint when the answer came fast (bench/ask_first_token.py).
        """
        old = self._lines.get(which)
        if old == (text, style):
            return
        self._lines[which] = (text, style)
        static = self.query_one(which, Static)
        shown = plain(text, style)
        width = static.content_size.width
        one_line = width > 0 and old is not None and max(cell_len(old[0]), shown.cell_len) <= width
        static.update(shown, layout=not one_line)

    # ---- asking ----

    @on(Input.Submitted, "#ask-input")
    def send(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if self.answering or not (text or self.attached):
            return
        images = tuple(self.attached)
        try:
            refuse_images(self.conv.model, self.vision, len(images))
        except ImageRefused as e:
            self._say(str(e), BAD)
            return
        event.input.value = ""
        self.attached.clear()
        self._head()
        self.conv.turns.append(Turn("user", text, images))
        log = self.query_one(ReplyLog)
        shown_pics = f" [+{len(images)} image(s)]" if images else ""
        log.write(("\n" if log.line_count else "") + visible(f"you: {text}{shown_pics}") + "\n\n")
        self.answering = True
        self._say("waiting for the first token…")
        self._answer()

    @work(group="ask", exclusive=True, exit_on_error=False)
    async def _answer(self) -> None:
        log = self.query_one(ReplyLog)
        load_first, self.load_first = self.load_first, False
        answer: Answer | None = None
        try:
            stream = self.fleet.ask(self.machine, self.conv, self.vision, self.max_tokens, load_first=load_first)
            async with contextlib.aclosing(stream) as pieces:
                async for item in pieces:
                    if isinstance(item, Piece):
                        log.write(visible(item.text, multiline=True, tab="    "))
                        self.shown.append((item.at, time.monotonic()))
                    else:
                        answer = item
        except asyncio.CancelledError:
            self._end("stopped mid-answer", partial=True)
            raise
        except HerdError as e:
            self.conv.turns.pop()  # not answered: not sent again with the next question
            self.answering = False
            self._say(str(e), BAD)
            return
        finally:
            self._head()
        assert answer is not None
        self.conv.turns.append(Turn("assistant", answer.text))
        cut = " (cut: the reply passed its size bound)" if answer.cut else ""
        self._end(answer.figures.line() + cut)

    def _end(self, words: str, partial: bool = False) -> None:
        self.answering = False
        if partial:
            self.conv.turns.pop()  # a question stopped mid-answer is asked again, not kept half-answered
        self.query_one(ReplyLog).write("\n")
        self._say(words)

    def action_stop_or_close(self) -> None:
        if self.answering:
            self.workers.cancel_group(self, "ask")
        else:
            self.dismiss(None)

    # ---- images ----

    def action_attach(self) -> None:
        if self.vision is False:
            self._say(f"{self.conv.model} has no vision: it said it takes no images", BAD)
            return
        self.app.push_screen(ImagePicker(Path.home()), self._picked)

    def _picked(self, path: Path | None) -> None:
        if path is not None:
            self._read(path)

    @work(group="ask-image", exit_on_error=False)
    async def _read(self, path: Path) -> None:
        try:
            image = await asyncio.to_thread(read_image, path)  # a file read: off the UI
        except ImageRefused as e:
            self._say(str(e), BAD)
            return
        self.attached.append(image)
        self._head()
        self._say(f"attached {image.name} ({len(image.data) // 1024} KiB); it goes with the next question")
