"""An image attached to a question: read within a size bound, its kind found from its first bytes (never from its
name alone), and sent inside the request as a `data:` URI, so it reaches a model on another machine without the file
going there."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path

from app.services.core.bounded import mib
from app.services.core.errors import HerdError

# A 4K photo as PNG is ~8-12 MB; base64 makes it a third bigger, and the router reads the whole body before it
# proxies it. Bigger than this is refused with its size, not sent.
MAX_IMAGE_BYTES = 10 * 1024 * 1024

# What the server's image decoder (stb_image) takes, by signature.
_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"BM", "image/bmp"),
)


class ImageRefused(HerdError):
    """An image that cannot be sent: missing, unreadable, too big, not a picture, or to a model without vision."""


@dataclass(frozen=True)
class AttachedImage:
    name: str
    """The file's name (no directories): what a conversation says of it once it is folded into words."""
    mime: str
    data: bytes = b""

    def data_uri(self) -> str:
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"


def kind_of(head: bytes) -> str | None:
    """The image's MIME type from its first bytes (WebP: RIFF....WEBP); None for anything else."""
    for sig, mime in _SIGNATURES:
        if head.startswith(sig):
            return mime
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def read_image(path: Path, limit: int = MAX_IMAGE_BYTES) -> AttachedImage:
    """The file as an attachment, or ImageRefused naming the file and the cause. Never reads past `limit`."""
    try:
        with path.open("rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise ImageRefused(f"image {path}: cannot read it ({e.strerror or type(e).__name__})") from None
    if len(data) > limit:
        raise ImageRefused(f"image {path}: bigger than the {mib(limit)} an image may be; not sent")
    mime = kind_of(data[:16])
    if mime is None:
        raise ImageRefused(f"image {path}: not a PNG, JPEG, GIF, BMP or WebP picture; not sent")
    return AttachedImage(path.name, mime, data)
