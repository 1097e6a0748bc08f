"""The demo's scripted tour: the keys an operator presses and what each brings on screen.

`make recording` plays it on `llamaherd demo` under asciinema (scripts/recording.py, docs/demo.cast); the tmux
test (tests/ui/test_demo_tmux.py) plays the same tour end to end, so the recording cannot go stale unnoticed.
Keys are tmux `send-keys` names ("/" and "?" as themselves: "slash" is typed as five letters). The machines the
tour acts on (workstation, gpu-box-a) are left alone by the scenario after the first key there, so what each step
waits for is the tour's own doing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    what: str
    keys: tuple[str, ...]
    shows: tuple[str, ...]
    """Texts that are all on screen once the keys took effect."""
    gone: tuple[str, ...] = ()
    """Texts that are not on screen any more (a closed screen, whose pane titles show on both sides of it)."""
    answer: tuple[str, str] | None = None
    """(question, key): when the question shows while waiting, the key answers it (a load that would evict a model
    asks first; whether it asks on a machine the scenario also used depends on what the scenario loaded there)."""
    hold: float = 2.0
    """Seconds a recording lingers after it, for a viewer to read (a test does not wait them)."""
    timeout: float = 60.0


def pick(machine_key: str, row: int) -> tuple[str, ...]:
    """Select a machine and the table's `row`-th model (sorted by name, so the same one every run); `f` twice on
    the way gives the table the focus whichever pane had it."""
    return (machine_key, "f", "f", *["Up"] * 6, *["Down"] * row)


LOAD_ANYWAY = ("Load anyway?", "y")

TOUR: tuple[Step, ...] = (
    Step("three machines come up", (), ("workstation", "gpu-box-a", "gpu-box-b", "chat-small"), hold=4.0, timeout=120),
    Step(
        "load code-mini on the workstation: it asks first, as it evicts chat-small",
        (*pick("1", 1), "l"),
        ("code-mini loaded on workstation",),
        answer=LOAD_ANYWAY,
        hold=3.0,
    ),
    Step("the fleet view: every model on every machine", ("f",), ("notes-nano", "chat-wide"), hold=3.0),
    Step("back to one machine", ("f",), ("models: workstation",)),
    Step(
        "a corrupt model on gpu-box-a fails, in one line",
        (*pick("2", 0), "l"),
        # The selected machine's card says it, cut at the pane's width (the toast, "… g for the log", may be held
        # back: the scenario fails this model too, and a model's repeated failures are toasted once a minute).
        ("broken-q4 failed to load",),
        gone=("Load anyway?",),  # the scenario's own failure of it may be on screen while the question is
        answer=LOAD_ANYWAY,
        hold=3.0,
    ),
    Step("its own log lines", ("g",), ("failed to load model",), hold=4.0),
    Step("every key", ("?",), ("everywhere",), hold=4.0),
    # Waited for before the next key: an Escape followed at once by "1" is read as alt+1.
    Step("back", ("Escape",), ("models: gpu-box-a",), gone=("toggle_fleet",)),
    Step("unload code-mini", (*pick("1", 1), "u"), ("code-mini unloaded on workstation",), hold=3.0),
)


class TourFailed(AssertionError):
    pass


def play(
    send_key: Callable[[str], None],
    screen: Callable[[], str],
    hold: Callable[[float], None] = lambda s: None,
    key_pause: float = 0.05,
    look_every: float = 0.1,
) -> None:
    """Play TOUR: send each step's keys one at a time, `key_pause` apart (a control key sent in one burst with
    others made the terminal parser drop the keys after it), then wait for what the step shows (TourFailed with
    the screen if it never does) and `hold` it."""
    for step in TOUR:
        for key in step.keys:
            send_key(key)
            time.sleep(key_pause)
        deadline = time.monotonic() + step.timeout
        shown = screen()
        answered = False
        while not all(t in shown for t in step.shows) or any(t in shown for t in step.gone):
            if step.answer and not answered and step.answer[0] in shown:
                hold(step.hold / 2)  # a viewer reads the question
                send_key(step.answer[1])
                answered = True
            if time.monotonic() > deadline:
                wanted = f"{step.shows} without {step.gone}" if step.gone else f"{step.shows}"
                raise TourFailed(f"tour step {step.what!r}: never showed {wanted}; the screen:\n{shown}")
            time.sleep(look_every)
            shown = screen()
        hold(step.hold)
