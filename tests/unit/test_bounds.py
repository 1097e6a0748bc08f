"""Everything that accumulates has a bound: each driven past it here, and checked to hold."""

from __future__ import annotations

from app.config import Config, MachineConfig
from app.services.core.fleet_events import LogLines, ModelsChanged
from app.services.core.log_lines import LogLine
from app.services.fleet import LOG_BACKLOG, MACHINE_LOG_LINES, Fleet


def line(i: int) -> LogLine:
    return LogLine(raw=f"line {i}", text=f"line {i}")


def test_a_subscriber_that_stops_reading_loses_log_lines_not_state() -> None:
    fleet = Fleet(Config(machines=(MachineConfig(name="m", url="http://127.0.0.1:9"),)))
    q = fleet.subscribe()
    initial = q.qsize()
    for i in range(10 * LOG_BACKLOG):
        fleet._emit(LogLines("m", (line(i),)))
    assert q.qsize() <= LOG_BACKLOG + initial
    fleet._emit(ModelsChanged("m", ()))  # state always goes through
    got = [q.get_nowait() for _ in range(q.qsize())]
    assert isinstance(got[-1], ModelsChanged)
    queued = sum(len(ev.lines) for ev in got if isinstance(ev, LogLines))
    fleet._emit(LogLines("m", (line(-1),)))  # reading again: told how many went by
    ev = q.get_nowait()
    assert isinstance(ev, LogLines) and ev.lines[0].source == "skipped"
    assert ev.lines[0].skipped == 10 * LOG_BACKLOG - queued and ev.lines[1] == line(-1)
    fleet.unsubscribe(q)
    assert fleet._dropped == {}


def test_machine_log_buffer_is_bounded() -> None:
    fleet = Fleet(Config(machines=(MachineConfig(name="m", preset="/nonexistent/models.ini"),)))
    m = fleet.machine("m")
    m.logs.extend(line(i) for i in range(MACHINE_LOG_LINES + 500))
    assert len(m.logs) == MACHINE_LOG_LINES and m.logs[-1] == line(MACHINE_LOG_LINES + 499)
