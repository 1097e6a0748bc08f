"""What a preset screen shows before it writes: a head that says what the write does, then the diff."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from app.services.core.textsafe import visible
from app.services.presets.store import PresetPlan
from app.ui.text.format import BAD, BUSY, DIM, OK
from app.ui.text.plain_text import safe_text


def diff_text(diff: str) -> Text:
    """A unified diff with added lines green and removed lines red."""
    out = Text()
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("+"):
            style = OK
        elif line.startswith("-"):
            style = BAD
        elif line.startswith("@@"):
            style = "cyan"
        else:
            style = ""
        out.append(visible(line) + "\n", style=style)  # the file's own text: shown, never interpreted
    return out


def save_head(section: str, plan: PresetPlan) -> Text:
    """The editor's question: write the edited section?"""
    head = Text.assemble(("Write ", "bold"), (f"[{section}]", "bold"), (f" to {plan.snapshot.path}?\n", "bold"))
    if plan.will_unload:
        head.append(f"Reloading will unload: {', '.join(plan.will_unload)}\n", style=BUSY)
    else:
        head.append("No loaded model is affected.\n", style=OK)
    if not plan.router_running:
        head.append("The router is not running: it reads the file when it starts.\n", style=DIM)
    head.append("enter or ctrl+s writes, escape goes back to the form.", style=DIM)
    return head


def add_head(section: str, plan: PresetPlan) -> Text:
    """The model files screen's question: add the new section?"""
    head = Text.assemble(("Add ", "bold"), (f"[{section}]", "bold"), (f" to {plan.snapshot.path}?\n", "bold"))
    if not plan.router_running:
        head.append("The router is not running: it reads the file when it starts.\n", style=DIM)
    elif plan.will_unload:
        head.append(f"The router reloads; that unloads: {', '.join(plan.will_unload)}\n", style=BUSY)
    else:
        head.append("The router reloads; no loaded model is affected.\n", style=OK)
    head.append("enter writes, escape goes back to the files.", style=DIM)
    return head


class PresetReview(VerticalScroll):
    """The head and the diff of a planned write, or of a conflict (what changed on disk meanwhile)."""

    DEFAULT_CSS = """
    PresetReview { height: 1fr; padding: 0 1; }
    PresetReview > .review-head { height: auto; margin-bottom: 1; }
    """

    def compose(self) -> ComposeResult:
        yield Static(classes="review-head")
        yield Static(classes="review-diff")

    def show(self, head: Text, diff: str) -> None:
        """Show `head` over `diff` from the top, and take the focus (the keys scroll the diff)."""
        self.query_one(".review-head", Static).update(safe_text(head, multiline=True))
        self.query_one(".review-diff", Static).update(diff_text(diff))
        self.scroll_home(animate=False)
        self.focus()
