"""Why a download did not land, read from the router's log: its events do not say (reference §2.7, and what this
llama-server build was seen to do against the hub stand-in):

| what happened                | the router's events | the download child's log says                        |
|------------------------------|---------------------|------------------------------------------------------|
| the hub has no such repo     | download_finished   | get_repo_commit: error: GET failed (404)             |
| the repo has no such quant   | download_finished   | no GGUF files found in repository ...; Available ... |
| the hub is unreachable       | download_finished   | get_repo_commit: error: HTTPLIB failed: ...          |
| a file cut mid-way every try | download_failed     | download failed after 3 attempts (Failed to read)    |
| the disk is full             | download_failed     | error writing to file: ... (no errno given)          |
| cancelled (unload)           | download_failed     | (router) unload: cancelling download for model ...   |

So the child's lines are found (its port from the router's "spawning server instance with name=X on port P"
line) and read for the first cause that matches; the router's own line for a cancel is read too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_SPAWN = re.compile(r"spawning server instance with name=(\S+) on port (\d+)")
_CHILD = re.compile(r"^\[(\d+)\]\s")
# Bound: lines kept as evidence with a cause.
EVIDENCE_LINES = 6


@dataclass(frozen=True)
class DownloadLog:
    cause: str  # one line; "" when the log says nothing that explains it
    evidence: tuple[str, ...]  # the lines the cause was read from


def _strip_stamp(line: str) -> str:
    """A log line without the child's port prefix and the build's timestamp and level ("0.00.012 E ...")."""
    line = _CHILD.sub("", line)
    return re.sub(r"^\d+\.\d+\.\d+\.\d+\s+[A-Z]\s+", "", line).strip()


def child_lines(lines: Sequence[str], name: str) -> tuple[list[str], list[str]]:
    """(the last download child's lines for `name`, the router's own lines from its spawn on)."""
    port = None
    start = 0
    for i, line in enumerate(lines):
        m = _SPAWN.search(line)
        if m and m[1] == name:
            port, start = m[2], i
    if port is None:
        return [], []
    child = [ln for ln in lines[start:] if ln.startswith(f"[{port}]")]
    router = [ln for ln in lines[start:] if not _CHILD.match(ln)]
    return child, router


def _available(lines: list[str]) -> list[str]:
    """The file names the child listed under "Available GGUF files:"."""
    out = []
    for ln in lines:
        text = _strip_stamp(ln)
        if text.startswith("- ") and text.lower().endswith(".gguf"):
            out.append(text[2:])
    return sorted(set(out))


def download_cause(lines: Sequence[str], name: str, hub: str, machine: str) -> DownloadLog:
    """The cause of a download of `name` that did not land, from the router log's last lines."""
    child, router = child_lines(lines, name)
    cancelled = [ln for ln in router if "cancelling download for model" in ln and name in ln]
    if cancelled:
        return DownloadLog("cancelled on request (the partial file was removed by the router)", (cancelled[-1],))
    texts = [_strip_stamp(ln) for ln in child]
    repo = name.split(":", 1)[0]
    for ln, text in zip(child, texts, strict=True):
        if "get_repo_commit" in text and "(404)" in text:
            return DownloadLog(f"{hub} has no repo {repo} (404 from the hub, as {machine} asked it)", (ln,))
        if "get_repo_commit" in text and ("(401)" in text or "(403)" in text):
            code = "401" if "(401)" in text else "403"
            # This build sends the hub's API no token that is not shaped like a Hugging Face one ("hf_...").
            shape = [x for x in child if "invalid token, authentication disabled" in x]
            why = ("the router's token was not sent: llama-server took it for invalid (not shaped like hf_...)"
                   if shape else "gated or private; the machine's hub_token_env gives the router a token")  # fmt: skip
            return DownloadLog(f"{hub} refused {repo} ({code}: {why})", (*shape[-1:], ln))
        if "get_repo_commit" in text and "HTTPLIB failed" in text:
            why = text.split("HTTPLIB failed:", 1)[1].strip()
            return DownloadLog(f"{hub} cannot be reached from {machine} ({why})", (ln,))
        if "get_repo_commit" in text and "error" in text:
            # Not "refused": this step also reads and writes the cache's refs file on the serving machine, so the
            # error may be the machine's own, not the hub's; the child's words say which.
            why = text.split("error:", 1)[-1].strip()
            return DownloadLog(f"{machine} could not resolve {repo}'s commit on {hub}: {why}", (ln,))
        if "no GGUF files found in repository" in text:
            have = _available(child)
            quant = name.split(":", 1)[1] if ":" in name else "a default"
            listed = ", ".join(have) if have else "none"
            return DownloadLog(f"{repo} has no {quant} file (it has: {listed})", (ln,))
        if "error writing to file" in text:
            path = text.split("error writing to file:", 1)[1].strip()
            return DownloadLog(
                f"{machine} could not write the download (disk full or not writable): {path}",
                tuple(child[-EVIDENCE_LINES:]),
            )
    failed = [ln for ln, t in zip(child, texts, strict=True) if "download failed after" in t]
    if failed:
        reasons = [
            t.split("download failed:", 1)[1].strip() for t in texts if "common_pull_file: download failed:" in t
        ]
        why = reasons[-1] if reasons else "no reason given"
        attempts = _strip_stamp(failed[-1]).split("download failed after", 1)[1].strip()
        return DownloadLog(
            f"the hub's file broke off on every try ({attempts}: {why})",
            tuple(ln for ln in child if "download failed" in ln)[-EVIDENCE_LINES:],
        )
    errors = [ln for ln in child if re.search(r"\s E\s", ln) or " E " in ln[:40]]
    if errors:
        return DownloadLog(_strip_stamp(errors[-1]), tuple(errors[-EVIDENCE_LINES:]))
    if not child:
        return DownloadLog("", ())
    return DownloadLog("", tuple(child[-EVIDENCE_LINES:]))
