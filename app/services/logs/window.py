"""Raw log lines between two flushes of a follower, parsed within a budget.

A router can write far more lines than anyone can read (20,000 a second with verbose logging and traffic). The
follower reads them all in large chunks, but parses only the newest `keep` lines of each flush; what came before is
counted into "N lines skipped" markers. Spawn lines are found by a substring test and always parsed, so the port ->
model attribution of later lines stays right. The log file on the serving machine keeps every line.
"""

from __future__ import annotations

from app.services.core.log_lines import SKIPPED_SOURCE, LogLine
from app.services.logs.parse import LogAttributor, skipped_marker


def merge_into(out: list[LogLine], more: list[LogLine]) -> None:
    """`out += more`, with a marker at the seam folded into the one before it."""
    if out and more and out[-1].source == SKIPPED_SOURCE and more[0].source == SKIPPED_SOURCE:
        out[-1] = skipped_marker(out[-1].skipped + more[0].skipped)
        more = more[1:]
    out.extend(more)


class LogWindow:
    def __init__(self, attributor: LogAttributor, keep: int) -> None:
        self.att = attributor
        self.keep = keep
        # Bound: 2 * keep raw lines; older ones are folded into `head` as markers (plus the rare spawn lines).
        self.raws: list[str] = []
        self.head: list[LogLine] = []

    def add(self, chunk: list[str]) -> None:
        self.raws.extend(chunk)
        if len(self.raws) > 2 * self.keep:
            cut = len(self.raws) - self.keep
            merge_into(self.head, self.att.parse_within(self.raws[:cut], keep=0))
            del self.raws[:cut]

    def take(self) -> list[LogLine]:
        """Everything since the last take: markers for what was skipped, then the newest lines, parsed."""
        out, self.head = self.head, []
        merge_into(out, self.att.parse_within(self.raws, self.keep))
        self.raws = []
        return out
