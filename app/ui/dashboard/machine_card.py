"""One machine's card in the machines pane: its link, its router, CPU/memory/GPU bars and a CPU sparkline.

A card draws itself for the width it gets: one dense line when the pane spans the screen (narrow terminals stack
the panes), several lines when it is a side column. A machine that is down is greyed out with the reason, and
comes back by itself when the fleet says so.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual import events
from textual.geometry import Region
from textual.message import Message
from textual.reactive import reactive
from textual.strip import Strip
from textual.style import Style as VisualStyle
from textual.visual import Visual, visualize
from textual.widget import Widget

from app.services.core.host_types import Connection, GpuStats
from app.services.core.router_types import RouterState
from app.services.core.textsafe import visible, visible_lines
from app.ui.dashboard.machine_trouble import failed_count, not_answering_count
from app.ui.state.herd_state import MachineState
from app.ui.text.format import BAD, BUSY, DIM, connection_text, duration, human_bytes, is_down, router_text
from app.ui.text.glyphs import Glyphs
from app.ui.text.plain_text import plain, safe_text
from app.ui.widgets.sticky_sizes import SizeHold

ONE_LINE_MIN_WIDTH = 56  # below this a card uses several lines
# Why a machine is down, in full on the selected card (others keep a line or two): the most lines it may take.
REASON_LINES_SELECTED = {True: 4, False: 12}  # one-line cards (the pane is at most 8 rows high), side column
OPEN_ROUTER_TEXT = "open: no API key: anyone on that host can use it. Restart it with one: x then s"


MAX_CARD_LINES = 64  # the room a held height may take (a card is a few lines)

# A compact line's state word, short enough to line up; the full words and reasons are on the selected card.
COMPACT_WORDS = {
    RouterState.RUNNING: "running",
    RouterState.ATTACHED: "attached",
    RouterState.STARTING: "starting",
    RouterState.STOPPING: "stopping",
    RouterState.STOPPED: "stopped",
    RouterState.ABSENT: "no router",
    RouterState.EXITED: "exited",
    RouterState.UNREACHABLE: "no answer",
    RouterState.NOT_ANSWERING: "no answer",
    RouterState.UNKNOWN: "?",
}
COMPACT_WORD_WIDTH = 9
# The compact line's 2-cell CPU bar (16 eighths) moves only when the CPU is this many eighths from what it shows: a
# host idling at ~27 % swung between 4 and 5 eighths every stats round, and so every line of the grid was painted
# again every 2 s (bench/fleet_size_ssh.py). The exact figure is on the selected machine's full card.
CPU_BAR_HOLD = 1.0


class MachineCard(Widget):
    """One machine. Re-rendered from its MachineState when the pane calls `update_state`.

    Painted line by line (Textual's line API): a stats round changes the CPU figure and sparkline, one line of the
    card, and only the lines whose text changed are rendered and sent to the terminal again. Rendering the whole
    card for it was a quarter of an idle dashboard's CPU with 5 managed routers.
    """

    # Posted by a clicked card and by the pane's up/down: it lives with the card, which cannot import its pane, and
    # the pane offers it as MachinesPane.Picked. The namespace keeps the handler name it had there.
    class Picked(Message, namespace="machines_pane"):
        def __init__(self, machine: str) -> None:
            super().__init__()
            self.machine = machine

    selected: reactive[bool] = reactive(False)

    def __init__(self, state: MachineState, glyphs: Glyphs, clock: Callable[[], float]) -> None:
        super().__init__(classes="machine-card")
        self.state = state
        self.glyphs = glyphs
        self.clock = clock
        self._uptime_text = ""
        self._stale_text = ""
        self._shown: list[Text] | None = None  # the lines on screen (None: work them out at the next paint)
        self._shown_width = 0
        # A model's failure, said on the card, leaves its room for a while when the model moves on.
        self._height = SizeHold()
        self._problem_lines = 0
        self._shrinking = False
        # Per row, the line last rendered, for which width and style, and its strip. Bound: one entry per row the
        # card has had (a card is a few lines; REASON_LINES_SELECTED caps the tallest).
        self._strips: dict[int, tuple[Text, int, VisualStyle, Strip]] = {}
        self.name_width = len(state.view.name)
        """Names are padded to the longest in the pane, so one-line cards line up like a table."""
        self._compact = False
        self._compact_drawn: tuple[object, ...] = ()
        self._cpu_eighths: int | None = None  # what the compact CPU bar shows (CPU_BAR_HOLD)

    @property
    def compact(self) -> bool:
        """One short line whatever the width (the compact pane's grid): state, models, the stats that fit."""
        return self._compact

    @compact.setter
    def compact(self, value: bool) -> None:
        if value != self._compact:
            self._compact = value
            self._height.reset([])
            self._shown = None
            self.refresh(layout=True)

    @property
    def machine(self) -> str:
        return self.state.view.name

    def watch_selected(self, value: bool) -> None:
        self._height.reset([])  # the operator's choice: fitted at once
        self.set_class(value, "-selected")
        self._shown = None
        self.refresh(layout=True)  # the selected card of a machine that is down says why in full: another height

    def update_state(self, state: MachineState) -> None:
        self.state = state
        self.set_class(is_down(state.view), "-down")
        if self._compact:
            # What a compact line shows, as a key: a stats round that moves none of it (the common case on an
            # idle fleet of fifty) costs this tuple, not a line of text made and compared.
            key = self._compact_key()
            if key == self._compact_drawn and self._shown is not None:
                return
            self._compact_drawn = key
        self._repaint()

    def _compact_key(self) -> tuple[object, ...]:
        st = self.state
        s = st.stats
        figures: tuple[object, ...] = ()
        if s is not None:
            gpu_used, gpu_total = _gpu_bytes(s.gpus)
            figures = (
                self._cpu_bar_eighths(s.cpu_pct),  # the 2-cell bar's eighths (_compact_stats)
                round(100 * s.mem_used / s.mem_total) if s.mem_total else None,
                round(100 * gpu_used / gpu_total) if gpu_total else None,
            )
        stale = bool(_stale_label(st, self.clock()))
        silent = not_answering_count(st)
        return (st.view, st.running_count(), len(st.by_id), failed_count(st), silent, figures, stale, self.selected)

    def _cpu_bar_eighths(self, cpu_pct: float) -> int:
        """The compact CPU bar's eighths: held where they are until the CPU moves CPU_BAR_HOLD away from them."""
        exact = min(1.0, max(0.0, cpu_pct / 100)) * 16
        if self._cpu_eighths is None or abs(exact - self._cpu_eighths) >= CPU_BAR_HOLD:
            self._cpu_eighths = round(exact)
        return self._cpu_eighths

    def tick(self) -> None:
        """Called each second: repaint only when the uptime text changed, so an idle dashboard stays idle."""
        now = self.clock()
        if self._compact:
            # A compact line shows no uptime, only whether the figures are stale: in a router's first minute every
            # line of the grid was made again each second for an uptime it does not show.
            if bool(_stale_label(self.state, now)) != bool(self._stale_text):
                self._repaint()
            return
        text = router_text(self.state.view, now)[0]
        if text != self._uptime_text or _stale_label(self.state, now) != self._stale_text:
            self._repaint()

    def _repaint(self) -> None:
        """A new layout only when the card's height changes; otherwise the lines whose text changed are repainted,
        and none when the card would show the same text (an idle machine's figures often round to what is shown)."""
        if not self.size.width:
            self._shown = None
            # A card not displayed (the compact grid's detail card, when not compact) is laid out once shown: a
            # layout asked here was the whole screen's, on every stats round (bench/pull_cost.py, ui_idle_cpu.py).
            if self.display:
                self.refresh(layout=True)
            return
        width = self._width()
        lines = self._lines(width)
        before = self._shown if self._shown_width == width else None
        if before is None:
            self._height.reset([])
        self._height.widths([self._problem_lines], room=MAX_CARD_LINES)
        if len(self._padded(lines)) > len(lines):
            self._shrink_later()
        lines = self._padded(lines)
        self._shown, self._shown_width = lines, width
        if before is None or len(before) != len(lines) or len(lines) != self.size.height:
            self.refresh(layout=True)
            return
        rows = [Region(0, y, self.size.width, 1) for y, (a, b) in enumerate(zip(before, lines, strict=True)) if a != b]
        if rows:
            self.refresh(*rows)

    def _padded(self, lines: list[Text]) -> list[Text]:
        """`lines`, with blank ones below where a problem's lines were, while their room is held."""
        room = (self._height.held[0] if self._height.held else 0) - self._problem_lines
        return lines + [Text("") for _ in range(room)] if room > 0 else lines

    def _shrink_later(self) -> None:
        if not self._shrinking:
            self._shrinking = True
            self.set_timer(self._height.due_in() + 0.05, self._shrink)

    def _shrink(self) -> None:
        self._shrinking = False
        if self._height.due_in() > 0:
            self._shrink_later()  # the taller card was needed again meanwhile: held from then
            return
        self._height.reset([])
        self._repaint()

    def on_click(self, event: events.Click) -> None:
        self.post_message(self.Picked(self.machine))

    def height_as_card(self, width: int) -> int:
        """The lines this machine takes as a card of `width` (not as a compact line): whether the cards would fit."""
        compact, self._compact = self._compact, False
        try:
            return len(self._lines(width))
        finally:
            self._compact = compact

    def get_content_height(self, container: object, viewport: object, width: int) -> int:
        return len(self._padded(self._lines(width)))

    def _width(self) -> int:
        return self.content_size.width or self.size.width

    def render(self) -> Text:
        """The card's text now (what a paint would show)."""
        # A net under the pieces below (names, reasons and problems are made visible where they are placed).
        return safe_text(Text("\n").join(self._lines(self._width())), multiline=True)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        style = self.visual_style
        if self._shown is None or self._shown_width != self._width():
            self._shown, self._shown_width = self._padded(self._lines(self._width())), self._width()
        if y >= len(self._shown):
            return Strip.blank(width, style.rich_style)
        line = self._shown[y]
        kept = self._strips.get(y)
        if kept is not None and kept[1] == width and kept[2] == style and kept[0] == line:
            return kept[3]
        # The same way Textual renders a widget's text (Content, the widget's style), one line at a time.
        content = visualize(self, safe_text(line))
        strip = Visual.to_strips(self, content, width, 1, style)[0]
        self._strips[y] = (line, width, style, strip)
        return strip

    # ---- drawing ----

    def _lines(self, width: int) -> list[Text]:
        if self._compact:
            self._problem_lines = 0
            return [self._compact_line(width)]
        st, g = self.state, self.glyphs
        v = st.view
        down = is_down(v)
        (rtext, rstyle), (ctext, cstyle) = self._state_texts()
        mark = Text(g.selected if self.selected else " ", style="bold")
        dot = Text(g.machine_down if down else g.machine_up, style=BAD if down else "green")
        name = plain(v.name, "bold")
        one_line = width >= ONE_LINE_MIN_WIDTH
        word, _, reason = ctext.partition(": ")
        told = self.selected and bool(reason)  # the selected card says the whole reason, wrapped
        rword, _, rreason = rtext.partition(": ")
        # The router's reason too ("unreachable: connection refused (GET …)"): cut at the card's edge, its cause was
        # the part lost.
        rtold = self.selected and one_line and bool(rreason)
        if one_line:
            name.pad_right(max(0, self.name_width - name.cell_len))
            link = word if told else ctext
            rshown = rword if rtold else rtext
            head = Text.assemble(mark, dot, " ", name, "  ", (link.ljust(9), cstyle), " ", (rshown.ljust(14), rstyle))
            label_room = len(self._stale_text) + 2 if self._stale_text else 0
            stats = self._fit_stats(width - head.cell_len - label_room)
            if self._stale_text and stats.plain:
                stats.stylize("dim")
                stats.append("  ")
                stats.append(self._stale_text, style=BUSY)
            lines = [head + stats]
            if told:
                chunks = g.wrap(reason, max(4, width - 3), REASON_LINES_SELECTED[True])
                lines += [Text.assemble("   ", (chunk, cstyle)) for chunk in chunks]
            if rtold:
                chunks = g.wrap(rreason, max(4, width - 3), REASON_LINES_SELECTED[True])
                lines += [Text.assemble("   ", (chunk, rstyle)) for chunk in chunks]
        else:
            # A side column: the link's state word beside the name, reasons wrapped below it, never cut to nothing.
            inner = max(8, width - 2)
            head = Text.assemble(mark, dot, " ", name)
            gap = width - head.cell_len - len(word)
            if gap >= 1:
                head.append(" " * gap)
                head.append(word, style=cstyle)
                lines = [head]
            else:
                lines = [head, Text.assemble("  ", (g.clip(word, inner), cstyle))]
            most = REASON_LINES_SELECTED[False] if told else 2
            lines += [Text.assemble("  ", (chunk, cstyle)) for chunk in g.wrap(reason, inner, most)]
            rmost = REASON_LINES_SELECTED[False] if self.selected else 2  # the router's reason in full when selected
            lines += [Text.assemble("  ", (chunk, rstyle)) for chunk in g.wrap(rtext, inner, rmost)]
            parts = self._stat_parts(inner, compact=False)
            if self._stale_text and st.stats is not None:
                # Figures from before a link went quiet: dimmed, with their age, never passed off as live.
                for p in parts:
                    p.stylize("dim")
                parts.insert(0, Text(self._stale_text, style=BUSY))
            lines += [Text("  ") + p for p in parts]
        if v.open_router:
            # A router started before llamaherd required a key: anyone on that host can drive it.
            room = max(4, width - 3)
            for chunk in g.wrap(OPEN_ROUTER_TEXT, room, 1 if one_line else 3):
                lines.append(Text.assemble("   ", (chunk, BUSY)))
        if st.not_answering:  # issue 35: loaded, but their children stopped answering
            names = ", ".join(sorted(st.not_answering))
            said = visible(f"{len(st.not_answering)} loaded, not answering: {names}")
            lines.append(Text.assemble(" ", (g.failed, BAD), " ", (g.clip(said, max(4, width - 3)), BAD)))
        self._problem_lines = 0
        if st.problem:
            room = max(4, width - 3)
            # the selected card says all of it (up to a bound); the others a line or three
            most = REASON_LINES_SELECTED[one_line] if self.selected else 1 if one_line else 3
            wrapped = g.wrap(visible_lines(st.problem), room, most)
            self._problem_lines = len(wrapped)
            for i, chunk in enumerate(wrapped):
                lines.append(Text.assemble(" ", (g.failed if i == 0 else " ", BAD), " ", (chunk, BAD)))
        if down:
            for ln in lines:
                ln.stylize("dim")
        for ln in lines:
            ln.no_wrap = True
            ln.truncate(width, overflow="ellipsis" if not g.ascii else "crop")
        return lines

    def _state_texts(self) -> tuple[tuple[str, str], tuple[str, str]]:
        """(router text, style), (connection text, style) now; what `tick` compares against is noted as they are."""
        st, now = self.state, self.clock()
        router = router_text(st.view, now)
        self._uptime_text = router[0]
        self._stale_text = _stale_label(st, now)
        return router, connection_text(st.view)

    def _compact_line(self, width: int) -> Text:
        """`▌● name  state  loaded/total ✖failed ◌not-answering  cpu 19% ▁▅▃ mem …`: the router's state in one word
        (its reason is on the selected machine's full card), then as many host figures as fit."""
        st, g = self.state, self.glyphs
        v = st.view
        down = is_down(v)
        (rtext, rstyle), (ctext, cstyle) = self._state_texts()
        if v.connection is Connection.UNREACHABLE:
            word, style = ctext.partition(": ")[0], cstyle
        else:
            word, style = COMPACT_WORDS.get(v.router_state, rtext.partition(" ")[0]), rstyle
        name = plain(v.name, "bold")
        name.pad_right(max(0, self.name_width - name.cell_len))
        line = Text.assemble(
            (g.selected if self.selected else " ", "bold"),
            (g.machine_down if down else g.machine_up, BAD if down else "green"),
            " ",
            name,
            " ",
            (word.ljust(COMPACT_WORD_WIDTH), style),
        )
        if not down:
            line.append(f" {st.running_count()}/{len(st.by_id)}".ljust(5), style=DIM)
            failed = failed_count(st)
            if failed:
                line.append(f"{g.failed}{failed} ", style=BAD)
            silent = not_answering_count(st)
            if silent:  # loaded, but their children stopped answering (the full card names them)
                line.append(f"{g.not_answering}{silent} ", style=BAD)
            stats = self._compact_stats(width - line.cell_len)
            if self._stale_text and stats.plain:
                stats.stylize("dim")
            line.append_text(stats)
        else:
            line.stylize("dim")
        line.no_wrap = True
        line.truncate(width, overflow="ellipsis" if not g.ascii else "crop")
        return line

    def _compact_stats(self, room: int) -> Text:
        """CPU as a short bar, memory and GPU memory as whole percents: figures that hold still on an idle machine
        (a number or a sparkline would move every round on every line of a fleet of fifty, each a repaint); the
        selected machine's full card has the exact figures and the sparkline."""
        s, g = self.state.stats, self.glyphs
        if s is None:
            return Text("")
        cpu = self._cpu_bar_eighths(s.cpu_pct) / 16
        parts = [Text.assemble(("cpu ", DIM), (g.bar(cpu, 2), _load_style(cpu)))]
        gpu_used, gpu_total = _gpu_bytes(s.gpus)
        for label, used, total in (("gpu ", gpu_used, gpu_total), ("mem ", s.mem_used, s.mem_total)):
            if total:
                frac = used / total
                parts.append(Text.assemble((label, DIM), (f"{round(frac * 100)}%", _load_style(frac))))
        while parts and sum(p.cell_len + 1 for p in parts) > room:
            parts.pop()
        out = Text("")
        for p in parts:
            out.append(" ")
            out.append_text(p)
        return out

    def _fit_stats(self, room: int) -> Text:
        """The richest one-line form of the host stats that fits: sparkline, then bars, then numbers, then fewer."""
        st, g = self.state, self.glyphs
        s = st.stats
        if s is None:
            return Text("")
        hist = st.cpu_history(self.clock())
        gpu_used, gpu_total = _gpu_bytes(s.gpus)

        def build(spark: int, bars: int, keep: int) -> Text:
            cpu = Text.assemble(("cpu ", DIM), (f"{s.cpu_pct:3.0f}%", _load_style(s.cpu_pct / 100)))
            if spark:
                cpu.append(" ")
                cpu.append(g.sparkline(hist, spark), style="cyan")
            parts = [cpu]
            if gpu_total:
                parts.append(_meter("gpu ", gpu_used, gpu_total, bars, g))
            if s.mem_total:
                parts.append(_meter("mem ", s.mem_used, s.mem_total, bars, g))
            out = Text("")
            for p in parts[:keep]:
                out.append("  ")
                out.append_text(p)
            return out

        for spark, bars, keep in ((12, 6, 3), (8, 5, 3), (6, 4, 3), (0, 4, 3), (0, 0, 3), (0, 0, 2), (0, 0, 1)):
            t = build(spark, bars, keep)
            if t.cell_len <= room:
                return t
        return Text("")

    def _stat_parts(self, width: int, compact: bool) -> list[Text]:
        st, g = self.state, self.glyphs
        s = st.stats
        if s is None:
            return [] if compact else [Text("no host stats yet", style=DIM)]
        bar_w = 8 if compact else max(4, min(14, (width - 10) // 2))
        parts: list[Text] = []
        hist = st.cpu_history(self.clock())
        spark_w = 12 if compact else max(0, width - 4 - bar_w - 5 - 1)
        cpu = Text.assemble(
            ("cpu ", DIM),
            (g.bar(s.cpu_pct / 100, bar_w), _load_style(s.cpu_pct / 100)),
            f" {s.cpu_pct:3.0f}%",
        )
        if spark_w >= 3:
            cpu.append(" ")
            cpu.append(g.sparkline(hist, spark_w), style="cyan")
        parts.append(cpu)
        if s.mem_total:
            frac = s.mem_used / s.mem_total
            parts.append(
                Text.assemble(
                    ("mem ", DIM),
                    (g.bar(frac, bar_w), _load_style(frac)),
                    f" {human_bytes(s.mem_used)}/{human_bytes(s.mem_total)}",
                )
            )
        if s.gpus:
            used, total = _gpu_bytes(s.gpus)
            frac = used / total if total else 0.0
            label = "gpu " if len(s.gpus) == 1 else f"gpu{len(s.gpus)}"
            parts.append(
                Text.assemble(
                    (label, DIM),
                    (g.bar(frac, bar_w), _load_style(frac)),
                    f" {human_bytes(used)}/{human_bytes(total)}",
                )
            )
        return parts


def _stale_label(st: MachineState, now: float) -> str:
    age = st.stats_age(now)
    return "" if age is None else f"as of {duration(age)} ago"


def _gpu_bytes(gpus: tuple[GpuStats, ...]) -> tuple[float, float]:
    mb = 1024 * 1024
    return sum(gp.memory_used_mb for gp in gpus) * mb, sum(gp.memory_total_mb for gp in gpus) * mb


def _meter(label: str, used: float, total: float, bar_w: int, g: Glyphs) -> Text:
    frac = used / total if total else 0.0
    t = Text(label, style=DIM)
    if bar_w:
        t.append(g.bar(frac, bar_w), style=_load_style(frac))
        t.append(" ")
    t.append(f"{human_bytes(used)}/{human_bytes(total)}")
    return t


def _load_style(frac: float) -> str:
    return "red" if frac >= 0.9 else "yellow" if frac >= 0.7 else "green"
