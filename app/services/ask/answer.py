"""Asking a loaded model: a streamed chat completion through its router, the reply handed on piece by piece as it
arrives, then the figures. Closing the iterator (or cancelling its task) closes the stream, and the server stops
generating at its next token.

Always sent with `?autoload=false`: a model that went away between the question and the answer is refused (400
"model is not loaded"), never loaded behind the operator's back; loading first is the caller's choice, asked.

Bounds: the headers and the first piece within FIRST_PIECE_WITHIN (plus the link's round trips: a slow link is not a
wedged model), every later piece within STALL_WITHIN of the one before, the reply within MAX_REPLY_CHARS (then the
stream is closed and the answer says it was cut).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from app.services.ask.chunks import DONE, read_chunk
from app.services.ask.conversation import Conversation
from app.services.ask.figures import AnswerFigures, FigureKeeper
from app.services.ask.images import ImageRefused
from app.services.ask.vision import is_projector, refuse_images
from app.services.core.bounded import sse_payloads
from app.services.core.errors import HerdError, RouterError, RouterNotAnswering, RouterUnreachable
from app.services.router.client import RouterClient

# A loaded model reads a long prompt before its first token (a 30k-token prompt on a CPU: minutes); a wedged one
# never answers. Generous, since asking is an operator waiting and watching, who can stop it.
FIRST_PIECE_WITHIN = 120.0
STALL_WITHIN = 60.0
MAX_REPLY_CHARS = 256 * 1024
DEFAULT_MAX_TOKENS = 512
# The request body itself (a conversation with its images as base64): the router reads it whole before proxying.
MAX_REQUEST_BYTES = 32 * 1024 * 1024

CHAT_PATH = "/v1/chat/completions"


class AskFailed(RouterError):
    """The answer could not be had: stalled, cut off by the server, or an error inside the stream."""


@dataclass(frozen=True)
class Piece:
    text: str
    at: float
    """The clock reading when it arrived here (bench: arrival to the consumer)."""


@dataclass(frozen=True)
class Answer:
    text: str
    figures: AnswerFigures
    finish_reason: str | None
    cut: bool = False
    """The reply passed MAX_REPLY_CHARS and was closed there."""


def request_body(
    conv: Conversation,
    vision: bool | None,
    max_tokens: int,
    stream: bool = True,
    extra: Mapping[str, Any] | None = None,
) -> bytes:
    """`extra`: sampling settings that ride on the request (temperature, ignore_eos ...); never the model or
    the messages."""
    body: dict[str, Any] = {
        **{k: v for k, v in (extra or {}).items() if k not in ("model", "messages", "stream")},
        "model": conv.model,
        "messages": conv.messages(vision),
        "max_tokens": max_tokens,
        "stream": stream,
    }
    if stream:
        body["stream_options"] = {"include_usage": True}
    data = json.dumps(body, separators=(",", ":")).encode()
    if len(data) > MAX_REQUEST_BYTES:
        raise ImageRefused(
            f"the question with its images is {len(data) // (1024 * 1024)} MiB, over the "
            f"{MAX_REQUEST_BYTES // (1024 * 1024)} MiB a request may be; not sent"
        )
    return data


def chat_path() -> str:
    return f"{CHAT_PATH}?autoload=false"


async def ask(
    client: RouterClient,
    conv: Conversation,
    vision: bool | None,
    *,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    first_within: float = FIRST_PIECE_WITHIN,
    stall_within: float = STALL_WITHIN,
    max_chars: int = MAX_REPLY_CHARS,
    clock: Callable[[], float] = time.monotonic,
    extra: Mapping[str, Any] | None = None,
) -> AsyncGenerator[Piece | Answer, None]:
    """Pieces of the reply as they arrive, then one Answer. Refused before anything is sent: a projector, images to
    a model that said it has no vision, a request over its size bound."""
    if is_projector(conv.model):
        raise ImageRefused(f"{conv.model} is a projector (mmproj): it is loaded beside a model, not talked to")
    last_images = len(conv.turns[-1].images) if conv.turns else 0
    refuse_images(conv.model, vision, last_images)
    body = request_body(conv, vision, max_tokens, extra=extra)
    where = f"{client.name}: {conv.model}"
    sent_at = clock()
    cm, resp = await client.post_stream(chat_path(), body, headers_within=first_within)
    keeper = FigureKeeper(sent_at)
    parts: list[str] = []
    size = 0
    finish: str | None = None
    cut = False
    try:
        payloads = sse_payloads(resp.aiter_bytes(), f"{where}: the answer").__aiter__()
        while True:
            wait = first_within if keeper.first_at is None else stall_within
            try:
                async with asyncio.timeout(client.bound(wait)):
                    payload = await payloads.__anext__()
            except StopAsyncIteration:
                break
            except TimeoutError:
                said = "no first token" if keeper.first_at is None else "the answer stalled: nothing more"
                raise RouterNotAnswering(f"{where}: {said} within {client.bound(wait):g} s") from None
            except httpx.TransportError as e:
                raise RouterUnreachable(f"{where}: the answer broke off ({e or type(e).__name__})") from None
            if payload.strip() == DONE:
                break
            facts = read_chunk(payload)
            if facts.error is not None:
                raise AskFailed(f"{where}: the server stopped the answer: {facts.error}")
            at = clock()
            keeper.saw(facts, at)
            finish = facts.finish_reason or finish
            if facts.text:
                room = max_chars - size
                text = facts.text[:room]
                size += len(text)
                parts.append(text)
                if text:
                    yield Piece(text, at)
                if len(facts.text) > room:
                    cut = True
                    break
    finally:
        await cm.__aexit__(None, None, None)
    yield Answer("".join(parts), keeper.figures(), finish, cut)


async def ask_whole(client: RouterClient, conv: Conversation, vision: bool | None, **kw: Any) -> Answer:
    """The Answer alone (the pieces dropped): tests and scripts."""
    async for item in ask(client, conv, vision, **kw):
        if isinstance(item, Answer):
            return item
    raise HerdError(f"{conv.model}: the answer ended without its end")  # pragma: no cover - ask always ends so
