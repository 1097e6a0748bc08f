"""A file written atomically over SFTP: a temporary file beside it, its mode set, renamed over the old one."""

from __future__ import annotations

import contextlib
import posixpath
import secrets

import asyncssh


async def sftp_write(sftp: asyncssh.SFTPClient, path: str, data: bytes, mode: int) -> None:
    parent = posixpath.dirname(path)
    if parent:
        await sftp.makedirs(parent, exist_ok=True)
    tmp = posixpath.join(parent, f".{posixpath.basename(path)}.{secrets.token_hex(4)}.tmp")
    try:
        async with sftp.open(tmp, "wb", attrs=asyncssh.SFTPAttrs(permissions=mode)) as f:
            await f.write(data)
        await sftp.chmod(tmp, mode)  # the server's umask applies at create
        try:
            await sftp.posix_rename(tmp, path)  # rename over an existing file, atomically
        except asyncssh.SFTPOpUnsupported:
            with contextlib.suppress(asyncssh.SFTPNoSuchFile):
                await sftp.remove(path)
            await sftp.rename(tmp, path)
    except BaseException:
        with contextlib.suppress(Exception):
            await sftp.remove(tmp)
        raise
