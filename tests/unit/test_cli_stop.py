"""What a `llamaherd stop` that finds nothing to stop prints (the real second stop: test_lifecycle_local)."""

from __future__ import annotations

import time

from app.cli.machine_cmds import already_stopped
from app.services.core.router_types import RouterState
from app.services.lifecycle.manager import RouterRecord, RouterStatus

REC = RouterRecord(pid=1305, start_time=1.0, port=8080, program="llama-server", preset="m.ini", log="r.log",
                   state=RouterState.STOPPING, stopped_at=1_000_000.0)  # fmt: skip


def test_a_second_stop_says_since_when() -> None:
    st = RouterStatus(RouterState.STOPPED, REC, reason="stopped on request", already=True)
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(REC.stopped_at))
    assert already_stopped(st, now=REC.stopped_at + 125) == (
        f"already stopped (since {when}, 2m05s ago): pid 1305, stopped on request"
    )


def test_a_record_from_before_stopped_at_was_kept_says_no_time() -> None:
    old = RouterRecord(**{**REC.__dict__, "stopped_at": 0.0})
    st = RouterStatus(RouterState.STOPPED, old, reason="stopped on request", already=True)
    assert already_stopped(st) == "already stopped: pid 1305, stopped on request"


def test_nothing_to_stop_for_another_reason_says_that_reason() -> None:
    absent = RouterStatus(RouterState.ABSENT, reason="no router has been started here", already=True)
    assert already_stopped(absent) == "not running: no router has been started here"
    exited = RouterStatus(RouterState.EXITED, REC, reason="router (pid 1305) exited without being asked", already=True)
    assert already_stopped(exited) == "not running: router (pid 1305) exited without being asked"
