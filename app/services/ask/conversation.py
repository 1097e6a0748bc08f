"""A short conversation with one model: its turns, and the `messages` array a chat completion is sent with (every
earlier turn again, since the server keeps nothing between requests)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.services.ask.images import AttachedImage


@dataclass(frozen=True)
class Turn:
    role: str  # "user" or "assistant"
    text: str
    images: tuple[AttachedImage, ...] = ()


@dataclass
class Conversation:
    model: str
    system: str = ""
    turns: list[Turn] = field(default_factory=list)

    def messages(self, vision: bool | None) -> list[dict[str, Any]]:
        """The turns as chat messages. The last user turn's images ride as `image_url` data URIs; an earlier turn's
        images too where the model takes pictures, and are folded into words where it does not (or is not known
        to): the router would refuse the whole request over one image part."""
        out: list[dict[str, Any]] = []
        if self.system:
            out.append({"role": "system", "content": self.system})
        last = len(self.turns) - 1
        for i, t in enumerate(self.turns):
            if not t.images:
                out.append({"role": t.role, "content": t.text})
            elif i == last or vision is True:
                parts: list[dict[str, Any]] = [{"type": "text", "text": t.text}] if t.text else []
                parts += [{"type": "image_url", "image_url": {"url": im.data_uri()}} for im in t.images]
                out.append({"role": t.role, "content": parts})
            else:
                out.append({"role": t.role, "content": folded(t)})
        return out


def folded(t: Turn) -> str:
    """A turn's images in words: what the model is told of a picture it cannot be shown."""
    names = ", ".join(im.name for im in t.images)
    said = f"[{len(t.images)} image{'s' if len(t.images) > 1 else ''} attached here, not shown to you: {names}]"
    return f"{t.text}\n{said}" if t.text else said
