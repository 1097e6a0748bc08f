"""Process identity (app/services/hosts/process_start.py) and the record fields that carry it."""

from __future__ import annotations

import json

from app.services.hosts import proc_probes
from app.services.hosts.process_start import ProcStart, parse_boot_id, same_process
from app.services.lifecycle.record import RouterRecord

BOOT = "0b4a1e3c-7d55-4c8e-9a3f-2f1d6e8b9c10"


def test_boot_relative_starts_decide_where_both_sides_have_them() -> None:
    rec = ProcStart(1000.0, BOOT, 5.0)
    assert same_process(ProcStart(1030.0, BOOT, 5.0), rec)  # the wall clock stepped 30 s: the same process
    assert same_process(ProcStart(1000.0, BOOT, 5.02), rec)  # within the 2 ticks
    assert not same_process(ProcStart(1000.0, BOOT, 5.05), rec)  # a reused pid, even at the same epoch start
    assert not same_process(ProcStart(1000.0, BOOT.replace("0b", "ff"), 5.0), rec)  # another boot
    assert not same_process(None, rec)


def test_the_epoch_start_decides_where_either_side_lacks_them() -> None:
    old = ProcStart(1000.0)  # a record an older llamaherd wrote
    assert same_process(ProcStart(1000.9, BOOT, 5.0), old)
    assert not same_process(ProcStart(1030.0, BOOT, 5.0), old)
    assert same_process(ProcStart(1000.5), ProcStart(1000.0, BOOT, 5.0))  # no /proc here (psutil's path)


def test_boot_ids_from_outside_are_kept_only_when_they_are_one() -> None:
    assert parse_boot_id(BOOT.upper() + "\n") == BOOT
    assert parse_boot_id("") == parse_boot_id("$(reboot)") == parse_boot_id("x" * 20) == ""
    assert proc_probes.proc_start(12345, 100, 1700000000, BOOT) == ProcStart(1700000123.45, BOOT, 123.45)
    assert proc_probes.proc_start(12345, 100, 1700000000, "") == ProcStart(1700000123.45)


def test_records_carry_the_boot_fields_and_still_read_old_and_newer_ones() -> None:
    rec = RouterRecord(pid=1, start_time=2.0, port=3, program="p", preset="x.ini", log="l", boot_id=BOOT,
                       since_boot=0.5)  # fmt: skip
    assert RouterRecord.from_json(rec.to_json()) == rec and rec.started == ProcStart(2.0, BOOT, 0.5)
    d = json.loads(rec.to_json())
    # a field a newer llamaherd adds is left out, not taken for damage (a "stale" record is cleared)
    newer = RouterRecord.from_json(json.dumps({**d, "future": [1]}).encode())
    assert newer == rec
    # boot fields that are not what we write: the epoch start alone decides
    odd = RouterRecord.from_json(json.dumps({**d, "since_boot": "soon"}).encode())
    assert odd is not None and odd.started == ProcStart(2.0)
    assert RouterRecord.from_json(b"[1, 2]") is None


def test_records_carry_where_the_run_began_in_the_log() -> None:
    rec = RouterRecord(pid=1, start_time=2.0, port=3, program="p", preset="x.ini", log="l", log_offset=4096)
    assert RouterRecord.from_json(rec.to_json()) == rec
    d = json.loads(rec.to_json())
    old = RouterRecord.from_json(json.dumps({k: v for k, v in d.items() if k != "log_offset"}).encode())
    assert old is not None and old.log_offset is None  # an older llamaherd's record: the log's end is read
    for bad in (-1, "4096", 1.5, True):
        odd = RouterRecord.from_json(json.dumps({**d, "log_offset": bad}).encode())
        assert odd is not None and odd.log_offset is None and odd.pid == 1, bad


def test_start_time_answers_from_the_far_side() -> None:
    stat = "12 (x y) %s " + "0 " * 18 + "500 0 0"
    answer = f"100\nbtime 1000\n{BOOT}\n{stat % 'S'}\n".encode()
    assert proc_probes.parse_start_lines(answer, live_only=True) == ProcStart(1005.0, BOOT, 5.0)
    zombie = answer.replace(b") S ", b") Z ")
    assert proc_probes.parse_start_lines(zombie, live_only=True) is None
    assert proc_probes.parse_start_lines(zombie, live_only=False) == ProcStart(1005.0, BOOT, 5.0)
    assert proc_probes.parse_start_lines(f"100\nbtime 1000\n\n{stat % 'S'}\n".encode(), live_only=True) == ProcStart(
        1005.0
    )
    assert proc_probes.parse_start_lines(b"100\nbtime 1000\n", live_only=False) is None  # gone: no stat line
