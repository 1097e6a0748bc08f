"""Where a router's downloads live on the serving machine, and which files there belong to one `repo:TAG`.

The folder is the router's (reference §5.2): LLAMA_CACHE, HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE, HF_HOME/hub,
XDG_CACHE_HOME/huggingface/hub, then HOME/.cache/huggingface/hub, in the router's own environment. The machine's
`hub_cache` is what a router llamaherd starts gets as LLAMA_CACHE; for any other router (adopted, started by hand)
its environment is read from /proc on the serving machine, since only that says where it really writes.
"""

from __future__ import annotations

import posixpath

from app.services.core.errors import HerdError
from app.services.core.host_types import FileInfo
from app.services.hub.repo_files import quant_of
from app.services.machine.machine import Machine

# Bound: a process environment is a few KB; more is not read.
MAX_ENVIRON = 256 * 1024
_ORDER = ("LLAMA_CACHE", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE")
PARTIAL = ".downloadInProgress"


def cache_from_environ(env: dict[str, str]) -> str | None:
    for k in _ORDER:
        if env.get(k):
            return env[k]
    if env.get("HF_HOME"):
        return posixpath.join(env["HF_HOME"], "hub")
    if env.get("XDG_CACHE_HOME"):
        return posixpath.join(env["XDG_CACHE_HOME"], "huggingface", "hub")
    if env.get("HOME"):
        return posixpath.join(env["HOME"], ".cache", "huggingface", "hub")
    return None


def parse_environ(data: bytes) -> dict[str, str]:
    out = {}
    for item in data[:MAX_ENVIRON].split(b"\0"):
        k, sep, v = item.partition(b"=")
        if sep:
            out[k.decode(errors="replace")] = v.decode(errors="replace")
    return out


async def router_cache(m: Machine) -> str | None:
    """The cache folder of `m`'s running router on the serving machine; None when it cannot be known."""
    pid = None
    if m.manager is not None:
        try:
            status = await m.manager.inspect()
            pid = status.record.pid if status.record is not None else None
        except HerdError:
            pid = None
    if pid is not None:
        try:
            env = parse_environ(await m.transport.read_file(f"/proc/{int(pid)}/environ"))
        except (OSError, HerdError):
            env = {}
        found = cache_from_environ(env)
        if found:
            return found
    if m.cfg.hub_cache:
        return await m.transport.expand(m.cfg.hub_cache)
    return None


def repo_folder(cache: str, repo: str) -> str:
    owner, _, name = repo.partition("/")
    return posixpath.join(cache, f"models--{owner}--{name}")


async def model_files(m: Machine, cache: str, model_id: str) -> list[FileInfo]:
    """The snapshot files of `repo:TAG` in the cache (shards included), plus the repo's unfinished downloads."""
    repo, _, tag = model_id.partition(":")
    folder = repo_folder(cache, repo)
    files = await m.transport.list_files([folder], pattern="*", max_depth=4)
    out = []
    for f in files:
        rel = posixpath.relpath(f.path, folder)
        if rel.startswith("snapshots/") and f.path.lower().endswith(".gguf"):
            if not tag or quant_of(f.path)[0] == tag.upper():
                out.append(f)
        elif rel.startswith("blobs/") and f.path.endswith(PARTIAL):
            out.append(f)
    return out
