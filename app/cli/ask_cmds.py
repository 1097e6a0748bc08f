"""Headless asking: `llamaherd ask MACHINE MODEL PROMPT` (a streamed answer, then its figures) and `llamaherd probe
MACHINE [MODEL]` (does each loaded model answer one token, within its bound).

ask: exit 0 answered, 1 refused or failed (a model without vision sent an image, a model that is not loaded and
may not be), 2 bad usage (an image that cannot be read or is too big), 130 stopped with Ctrl+C (the stream is
closed, so the server stops generating). A model that is not loaded is loaded first only with consent: asked on a
terminal (y/N, saying what the load evicts), refused without one unless `--load` is given.
probe: exit 0 when every model probed (or the one named) answers, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from pathlib import Path

from app.cli.context import CliContext
from app.cli.output import err
from app.errors import ConfigError
from app.services.ask.answer import DEFAULT_MAX_TOKENS, Answer, ask
from app.services.ask.conversation import Conversation, Turn
from app.services.ask.images import AttachedImage, ImageRefused, read_image
from app.services.ask.probe import ProbeResult, probe_router
from app.services.ask.readiness import Readiness, readiness
from app.services.ask.vision import refuse_images
from app.services.core.textsafe import visible
from app.services.router.load_and_wait import ensure_loaded

MAX_PROMPT_CHARS = 1024 * 1024


def _images(paths: list[str]) -> tuple[AttachedImage, ...]:
    try:
        return tuple(read_image(Path(p)) for p in paths)
    except ImageRefused as e:
        raise ConfigError(str(e)) from None  # bad input: exit 2, nothing asked


async def _agreed(question: str) -> bool:
    """y/N on the terminal (read off the event loop)."""
    sys.stderr.write(visible(question) + " Load it? [y/N] ")
    sys.stderr.flush()
    try:
        said = await asyncio.to_thread(sys.stdin.readline)
    except (OSError, ValueError):
        return False
    return said.strip().lower() in ("y", "yes")


async def cmd_ask(ctx: CliContext, args: argparse.Namespace) -> int:
    if len(args.prompt) > MAX_PROMPT_CHARS:
        raise ConfigError(f"the prompt is over {MAX_PROMPT_CHARS} characters")
    images = _images(args.image)
    async with ctx.router(args.machine) as r:
        models = await r.client.models()
        props = await r.client.props()
        ready: Readiness = readiness(args.model, models, props.max_instances)
        refuse_images(ready.model, ready.vision, len(images))  # before anything is sent, a load included
        if ready.needs_load:
            question = ready.load_question(args.machine)
            if not args.load:
                if not sys.stdin.isatty():
                    err(visible(f"{question} Not loaded: pass --load to load it."))
                    return 1
                if not await _agreed(question):
                    err("not asked: the model was not loaded")
                    return 1
            err(visible(f"loading {ready.model} on {args.machine}…"))
            info = await ensure_loaded(r.client, ready.model, log_tail=r.model_log_tail)
            if info is not None:
                ready = readiness(ready.model, [info], props.max_instances)
            refuse_images(ready.model, ready.vision, len(images))  # what the loaded model says of itself
        elif ready.asleep:
            err(visible(f"{ready.model} is sleeping: the question wakes it (its first token waits for the load)"))
        conv = Conversation(ready.model, system=args.system or "", turns=[Turn("user", args.prompt, images)])
        answer: Answer | None = None
        try:
            async with contextlib.aclosing(ask(r.client, conv, ready.vision, max_tokens=args.max_tokens)) as pieces:
                async for item in pieces:
                    if isinstance(item, Answer):
                        answer = item
                    elif not args.json:
                        sys.stdout.write(visible(item.text, multiline=True, tab="\t"))
                        sys.stdout.flush()
        except asyncio.CancelledError:
            if not args.json:
                sys.stdout.write("\n")
            err("stopped mid-answer")
            raise
    assert answer is not None
    if args.json:
        print(
            json.dumps(
                {
                    "text": answer.text,
                    **answer.figures.as_json(),
                    "finish_reason": answer.finish_reason,
                    "cut": answer.cut,
                }
            )
        )
    else:
        sys.stdout.write("\n")
        cut = " (cut: the reply passed its size bound)" if answer.cut else ""
        err(visible(answer.figures.line() + cut))
    return 0


def probe_line(p: ProbeResult) -> str:
    if p.answering and p.probed:
        return f"{p.model}: answering ({p.ms:g} ms)"
    if not p.probed:
        return f"{p.model}: {p.reason}"
    return f"{p.model}: NOT ANSWERING ({p.reason})"


async def cmd_probe(ctx: CliContext, args: argparse.Namespace) -> int:
    async with ctx.router(args.machine) as r:
        results = await probe_router(r.client, args.model)
    if args.json:
        print(json.dumps([p.as_json() for p in results]))
    elif not results:
        print("no model loaded: nothing to probe")
    else:
        for p in results:
            print(visible(probe_line(p)))
    return 0 if all(p.answering for p in results) else 1


def _positive(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 1_000_000:
        raise argparse.ArgumentTypeError("between 1 and 1000000")
    return value


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "ask",
        help="ask a model a question: the answer as it streams, then time to first token and tokens/s",
        description="A streamed chat completion through the machine's router. The reply is printed as it arrives "
        "(control characters made visible), then the figures on stderr. A model that is not loaded is loaded only "
        "with consent: asked on a terminal, refused without one unless --load. Ctrl+C stops mid-answer.",
    )
    p.add_argument("machine", help="machine name from config.toml")
    p.add_argument("model", help="model name (preset section) or alias")
    p.add_argument("prompt", help="the question")
    p.add_argument(
        "--image",
        action="append",
        default=[],
        metavar="FILE",
        help="attach a picture (PNG, JPEG, GIF, BMP, WebP; sent as a data URI); may be repeated",
    )
    p.add_argument("--system", metavar="TEXT", help="a system message")
    p.add_argument(
        "--max-tokens",
        type=_positive,
        default=DEFAULT_MAX_TOKENS,
        metavar="N",
        help=f"longest reply in tokens (default {DEFAULT_MAX_TOKENS})",
    )
    p.add_argument("--load", action="store_true", help="load the model first if it is not loaded, without asking")
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object: text, ttft_ms, tokens_per_s, prompt_tokens, completion_tokens",
    )
    p.set_defaults(func=cmd_ask)

    p = sub.add_parser(
        "probe",
        help="does each loaded model answer? (a one-token completion, bounded)",
        description="Send a one-token completion to each loaded model (or the one named), never to one that is not "
        "loaded, and to a sleeping one only when named. Exit 0 when every one answers within its bound, 1 "
        "otherwise.",
    )
    p.add_argument("machine", help="machine name from config.toml")
    p.add_argument("model", nargs="?", help="only this model (a sleeping one is woken)")
    p.add_argument("--json", action="store_true", help="print a JSON list: model, answering, ms, reason, probed")
    p.set_defaults(func=cmd_probe)
