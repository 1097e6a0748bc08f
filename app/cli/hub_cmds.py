"""Headless hub commands: search, pull, rm. Exit 0 done, 1 failed (the cause on stderr), 2 usage/config,
130 interrupted."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
import time

from app.cli.context import CliContext
from app.cli.history_cmds import note_request
from app.cli.output import err
from app.errors import ConfigError
from app.services.core.errors import HerdError
from app.services.core.textsafe import visible
from app.services.history.downloads import pull_row, record, removal_row
from app.services.history.scope import router_scope
from app.services.hub.hub_api import HubError, valid_repo
from app.services.hub.progress import PullProgress, human_bytes, progress_text
from app.services.hub.pull import BadSpec, Pull, PullOutcome, parse_spec
from app.services.hub.remove import remove
from app.services.hub.repo_files import find_quant, group
from app.services.hub.search import RepoChoices, hub_client, repo_choices, search_repos, unreachable_hint
from app.services.lifecycle.hub_env import hub_difference
from app.services.machine.machine import Machine

BY_PULL = "command `llamaherd pull`"
BY_RM = "command `llamaherd rm`"
# Plain (not a terminal) progress lines: at most one per this many seconds.
PLAIN_EVERY = 1.0
BAR_WIDTH = 24
# The hub's listing is asked from here only to know a pull's total size in advance; past this it is not waited for.
LISTING_TIMEOUT = 5.0


def _print(text: str) -> None:
    print(visible(text))


async def cmd_search(ctx: CliContext, args: argparse.Namespace) -> int:
    cfg = ctx.config.machine(args.machine)
    query = args.query.strip()
    try:
        if "/" in query:
            if not valid_repo(query):
                raise ConfigError(f"not a repo name: {query!r} (OWNER/REPO)")
            async with ctx.machine(args.machine) as m:
                choices = await repo_choices(m, query)
            return _print_choices(args, choices)
        hits = await search_repos(cfg, query)
    except HubError as e:
        err(visible(unreachable_hint(cfg, e)))
        return 1
    if args.json:
        print(json.dumps([{"id": h.id, "downloads": h.downloads, "likes": h.likes} for h in hits], indent=2))
        return 0
    if not hits:
        _print(f"no GGUF repos on {cfg.hub} match {query!r}")
    for h in hits:
        _print(f"{h.id}" + (f"  ({h.downloads} downloads)" if h.downloads is not None else ""))
    return 0


def _print_choices(args: argparse.Namespace, choices: RepoChoices) -> int:
    listing = choices.listing
    if args.json:
        out = {
            "repo": listing.repo,
            "quants": [
                {"quant": q.quant, "name": f"{listing.repo}:{q.quant}", "files": list(q.paths), "size": q.size,
                 "verdict": choices.fits[q.quant].verdict if q.quant in choices.fits else "unknown",
                 "fit": choices.fits[q.quant].line if q.quant in choices.fits else choices.note}
                for q in listing.quants
            ],
            "vision": [{"file": v.first, "size": v.size} for v in listing.vision],
            "note": choices.note,
        }  # fmt: skip
        print(json.dumps(out, indent=2))
        return 0
    if not listing.quants:
        _print(f"{listing.repo}: no GGUF file with a quant tag")
    for q in listing.quants:
        fit = choices.fits.get(q.quant)
        shards = f" ({len(q.paths)} files)" if len(q.paths) > 1 else ""
        _print(f"{listing.repo}:{q.quant:<10} {human_bytes(q.size):>9}{shards}  {fit.line if fit else 'unknown'}")
    for v in listing.vision:
        _print(f"vision companion: {v.first} {human_bytes(v.size)} (fetched with a quant)")
    if choices.note:
        _print(choices.note)
    return 0


async def _expected_total(m: Machine, repo: str, quant: str | None) -> int:
    """The pull's size from the hub's listing asked from here (the quant plus the projector the router also
    fetches); 0 when it cannot be known quickly (the hub may be reachable only from the machine)."""
    with contextlib.suppress(HubError, TimeoutError):
        async with asyncio.timeout(LISTING_TIMEOUT), hub_client(m.cfg) as hub:
            listing = group(repo, await hub.files(repo))
            q = find_quant(listing, quant) if quant else (listing.quants[0] if listing.quants else None)
            if q is not None:
                return q.size + (listing.vision[-1].size if listing.vision else 0)
    return 0


class ProgressPrinter:
    def __init__(self, json_lines: bool, tty: bool) -> None:
        self.json_lines, self.tty = json_lines, tty
        self._last = 0.0
        self._drawn = False

    def __call__(self, p: PullProgress) -> None:
        if self.json_lines:
            print(json.dumps({"event": "progress", "model": p.name, "done": p.done, "total": p.total,
                              "rate": p.rate, "eta": p.eta}), flush=True)  # fmt: skip
            return
        now = time.monotonic()
        if not self.tty and now - self._last < PLAIN_EVERY and p.done < p.total:
            return
        self._last = now
        if self.tty:
            frac = p.fraction or 0.0
            fill = int(frac * BAR_WIDTH)
            bar = "█" * fill + "·" * (BAR_WIDTH - fill)
            sys.stdout.write(f"\r{bar} {frac * 100:3.0f}% {progress_text(p)}\x1b[K")
            sys.stdout.flush()
            self._drawn = True
        else:
            print(visible(f"{p.name}: {progress_text(p)}"), flush=True)

    def end(self) -> None:
        if self._drawn:
            sys.stdout.write("\n")
            self._drawn = False


def _ask(question: str) -> bool:
    try:
        return input(question).strip().lower() in ("y", "yes")
    except EOFError:
        return False


async def cmd_pull(ctx: CliContext, args: argparse.Namespace) -> int:
    try:
        repo, quant = parse_spec(args.repo)
    except BadSpec as e:
        raise ConfigError(str(e)) from None
    printer = ProgressPrinter(args.json, sys.stdout.isatty() and not args.json)
    async with ctx.machine(args.machine) as m:
        await m.transport.connect()
        await _warn_hub_settings(m)
        pull = Pull(m, args.repo, await _expected_total(m, repo, quant), on_progress=printer)
        interrupted = asyncio.Event()
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signal.SIGINT, interrupted.set)
        try:
            await note_request(m.name, pull.name, "pull", "pull", router_scope(m.cfg))
            outcome = await _run_or_interrupt(pull, interrupted, printer)
        finally:
            with contextlib.suppress(NotImplementedError):
                loop.remove_signal_handler(signal.SIGINT)
        printer.end()
    if outcome is None:
        return 130
    if not outcome.already:  # nothing happened: nothing to record
        await record([pull_row(m.cfg, outcome.model or outcome.requested, outcome.ok, outcome.cause, BY_PULL)])
    return _report(args, outcome)


async def _run_or_interrupt(pull: Pull, interrupted: asyncio.Event, printer: ProgressPrinter) -> PullOutcome | None:
    """The outcome; None when interrupted and the download was left running on the router."""
    run = asyncio.ensure_future(pull.run())
    stop = asyncio.ensure_future(interrupted.wait())
    try:
        await asyncio.wait({run, stop}, return_when=asyncio.FIRST_COMPLETED)
        if run.done():
            return run.result()
        printer.end()
        tty = sys.stdin.isatty()
        question = f"cancel the download of {pull.name} on {pull.machine.name}? [y/N] "
        if tty and await asyncio.to_thread(_ask, question):
            await pull.cancel()
            return await run
        err(visible(f"{pull.name}: left downloading on {pull.machine.name}; cancel it with "
                    f"`llamaherd unload {pull.machine.name} {pull.name}`"))  # fmt: skip
        return None
    finally:
        for f in (run, stop):
            if not f.done():
                f.cancel()
                with contextlib.suppress(asyncio.CancelledError, HerdError):
                    await f


async def _warn_hub_settings(m: Machine) -> None:
    """An adopted router started without the machine's hub settings downloads from elsewhere: said, not fatal."""
    if m.manager is None:
        return
    with contextlib.suppress(HerdError):
        status = await m.manager.inspect()
        if status.record is not None:
            cache = await m.transport.expand(m.cfg.hub_cache) if m.cfg.hub_cache else None
            diff = hub_difference(m.cfg, status.record.hub, cache)
            if diff:
                err(visible(f"note: {diff}"))


def _report(args: argparse.Namespace, o: PullOutcome) -> int:
    if args.json:
        print(json.dumps({"event": "outcome", **o.as_json()}), flush=True)
    if o.ok:
        if not args.json:
            size = f" ({human_bytes(o.bytes_on_disk)} in {len(o.files)} file(s))" if o.files else ""
            _print(f"{o.machine}: {o.cause}{size}")
            _print(f"load it with: llamaherd load {o.machine} {o.model}")
        return 0
    err(visible(f"{o.machine}: {o.requested}: pull failed: {o.cause}"))
    if not args.json:
        for line in o.evidence:
            err("  " + visible(line))
    return 1


async def cmd_rm(ctx: CliContext, args: argparse.Namespace) -> int:
    if not args.yes:
        if not sys.stdin.isatty():
            raise ConfigError("rm deletes files on the machine: confirm with --yes when not on a terminal")
        if not await asyncio.to_thread(_ask, f"remove {args.model} from {args.machine} and delete its files? [y/N] "):
            err("nothing removed")
            return 1
    async with ctx.machine(args.machine) as m:
        await m.transport.connect()
        await note_request(m.name, args.model, "rm", "rm", router_scope(m.cfg))
        done = await remove(m, args.model)
        await record([removal_row(m.cfg, done.model, done.line(), BY_RM)])
    if args.json:
        print(json.dumps(done.as_json(), indent=2))
    elif done.ok:
        _print(done.line())
    if not done.ok:
        err(visible(done.line()))
        return 1
    return 0


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "search",
        help="search a machine's hub for GGUF repos, or list one repo's quants with a fit verdict",
        description="With a query: the GGUF repos on the machine's hub that match it. With OWNER/REPO: that repo's "
        "GGUF files by quant (shards as one, the vision projector apart), each with its size and a fit verdict "
        "for the machine from its header (a Range request; nothing is downloaded). The hub is asked from here.",
    )
    p.add_argument("machine", help="machine name from config.toml")
    p.add_argument("query", help="words to search for, or OWNER/REPO")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_search)

    p = sub.add_parser(
        "pull",
        help="download a model into a machine's router cache, with progress",
        description="Ask the machine's router to download OWNER/REPO[:QUANT] from its hub (its own download child, "
        "on the serving machine), follow the progress, and say the outcome: the model in the router's list, "
        "or why not (exit 1). Ctrl+C asks whether to cancel the download on the router or leave it running.",
    )
    p.add_argument("machine", help="machine name from config.toml")
    p.add_argument("repo", metavar="REPO[:QUANT]", help="OWNER/REPO, optionally :QUANT (Q4_K_M, Q8_0, ...)")
    p.add_argument("--json", action="store_true", help="print progress and the outcome as JSON lines")
    p.set_defaults(func=cmd_pull)

    p = sub.add_parser(
        "rm",
        help="remove a downloaded model and its cached files from a machine",
        description="Unload the model if it runs, remove it from the router's cache (DELETE /models) and check "
        "that its files are gone. A model that is not from the cache (a preset's own file) is refused.",
    )
    p.add_argument("machine", help="machine name from config.toml")
    p.add_argument("model", help="the model's id (OWNER/REPO:QUANT)")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.add_argument("--json", action="store_true", help="print what was removed as JSON")
    p.set_defaults(func=cmd_rm)
