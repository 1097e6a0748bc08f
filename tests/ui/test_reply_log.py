"""The ask pane's reply log: streamed pieces written without a layout of the screen, the extent the scrollbars
see kept right, the end followed only while the reader is at it, the lines bound."""

from __future__ import annotations

from textual.app import App, ComposeResult

from app.ui.widgets.reply_log import ReplyLog


class ReplyApp(App[None]):
    def compose(self) -> ComposeResult:
        yield ReplyLog(max_lines=50)


async def test_a_piece_is_drawn_without_laying_the_screen_out() -> None:
    app = ReplyApp()
    async with app.run_test(size=(40, 10)) as pilot:
        log = app.query_one(ReplyLog)
        log.write("first line\n")
        await pilot.pause()
        log.write("a piece that widens the line")
        assert not app.screen._layout_required  # a plain Log.write asks for one here
        assert log.virtual_size.width == len("a piece that widens the line")
        assert log.line_count == 2
        await pilot.pause()
        assert "a piece that widens" in "".join(s.text for s in log.render_line(1))


def lines(n: int, word: str = "line") -> str:
    return "".join(f"{word} {i}\n" for i in range(n))


async def test_the_end_is_followed_only_from_the_end() -> None:
    app = ReplyApp()
    async with app.run_test(size=(40, 10)) as pilot:
        log = app.query_one(ReplyLog)
        log.write(lines(30))
        await pilot.pause()
        assert log.scroll_y == log.max_scroll_y > 0  # at the end: it followed
        log.scroll_to(y=3, animate=False, immediate=True)
        log.write(lines(5, "more"))
        await pilot.pause()
        assert log.scroll_y == 3  # scrolled up to read: left where the reader is
        log.scroll_end(animate=False, immediate=True)
        log.write("last\n")
        await pilot.pause()
        assert log.scroll_y == log.max_scroll_y


async def test_the_lines_stay_within_their_bound() -> None:
    app = ReplyApp()
    async with app.run_test(size=(40, 10)) as pilot:
        log = app.query_one(ReplyLog)
        log.write(lines(120))
        await pilot.pause()
        assert log.line_count <= 50
        assert log.virtual_size.height == log.line_count
        assert "line 119" in "".join(s.text for s in log.render_line(log.size.height - 2))
