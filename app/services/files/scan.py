"""Model files on a machine: scan its models_dirs for *.gguf (locally or over ssh) and read GGUF headers.

Only the header is read, and remotely only the first bytes of the file: a model is gigabytes, its header is
kilobytes (a vocabulary array can make it a few megabytes; the read grows until the header is complete).
"""

from __future__ import annotations

from app.services.files.discovery import DiscoveredModel, Discovery, classify, section_for
from app.services.files.gguf_header import GgufFormatError, GgufHeader, parse_gguf_header
from app.services.hosts.transport import Transport

FIRST_READ = 256 * 1024
MAX_HEADER = 64 * 1024 * 1024


async def scan(transport: Transport, dirs: tuple[str, ...]) -> Discovery:
    expanded = [await transport.expand(d) for d in dirs]
    files = await transport.list_files(expanded, pattern="*.gguf", max_depth=2)
    root = expanded[0].rstrip("/") if len(expanded) == 1 else None
    return classify(files, root=root)


async def read_header(transport: Transport, path: str) -> GgufHeader | None:
    """The GGUF header, or None when the file is not a readable GGUF."""
    n = FIRST_READ
    while True:
        try:
            data = await transport.read_head(path, n)
        except FileNotFoundError:
            return None
        try:
            header = parse_gguf_header(data)
        except GgufFormatError:
            return None
        if not header.truncated or len(data) < n or n >= MAX_HEADER:
            return header
        n = max(n * 4, 2 * (header.bytes_needed or 0))


async def new_section(transport: Transport, model: DiscoveredModel) -> dict[str, str]:
    """The preset keys for a discovered model, with MTP drafting where its header shows MTP layers."""
    return section_for(model, await read_header(transport, model.path))
