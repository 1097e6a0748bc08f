"""`llamaherd top` counts and names the loaded models that stopped answering (issue 35): they have no figures, so
without this they were simply missing from its table; in --json each machine lists its own."""

from __future__ import annotations

from app.cli.top_cmds import Watched, document, not_answering_lines, table
from app.config import MachineConfig
from app.services.activity.poll import ActivityChanged
from app.services.machine.machine import Machine


def test_the_table_counts_and_names_them_per_machine() -> None:
    rounds = [
        ActivityChanged("box", (), not_answering=("alpha", "beta")),
        ActivityChanged("gpu", (), not_answering=()),
        ActivityChanged("far", (), not_answering=("gamma\x1b[2J",)),
    ]
    lines = not_answering_lines(rounds)
    assert lines[0].startswith("3 loaded models not answering")
    assert lines[1:] == ["  box: alpha, beta", "  far: gamma␛[2J"]  # a model id from outside: shown, not obeyed
    shown = table([], rounds)
    assert "(no loaded model)" in shown and "3 loaded models not answering" in shown
    assert not_answering_lines([ActivityChanged("gpu", ())]) == []


def test_json_lists_them_under_their_machine() -> None:
    watched = [Watched(Machine(MachineConfig(name=n), emit=lambda ev: None)) for n in ("box", "gpu")]
    doc = document(watched, [ActivityChanged("box", (), not_answering=("alpha",))], 0.0)
    assert [(m["machine"], m["not_answering"]) for m in doc["machines"]] == [("box", ["alpha"]), ("gpu", [])]
