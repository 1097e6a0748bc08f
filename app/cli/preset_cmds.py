"""`llamaherd preset ...`: the preset editor without a screen, with the same validation, diff, backup and reload."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import posixpath
from collections.abc import Callable

from app.cli.context import CliContext
from app.cli.output import err
from app.services.core.errors import PresetInputError, SectionExists
from app.services.core.textsafe import visible, visible_lines
from app.services.files import scan as model_files
from app.services.files.discovery import DiscoveredModel, classify
from app.services.machine.machine import Machine
from app.services.presets.secret_keys import exposed_by_argv
from app.services.presets.store import Edit, PresetStore, add_section, remove_section, set_keys, unset_keys


def parse_assignments(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise PresetInputError(f"expected key=value, got {item!r}")
        out[key.strip()] = value.strip()
    return out


async def _run_edit(
    m: Machine, edit_for: Callable[[frozenset[str]], Edit], dry_run: bool, *, adds_keys: bool = True
) -> int:
    store = PresetStore(m)
    # Only an edit that writes keys needs the server's options (`llama-server --help`); removing needs none.
    # Asked while the lock is being taken, and so are the router's running models: over ssh they overlap
    # instead of costing round trips each.
    asked = asyncio.ensure_future(store.known_keys() if adds_keys else _no_keys())
    store.ask_running()
    try:
        if dry_run:
            return await _edit_once(store, edit_for(await asked), dry_run)
        # Read, plan and write under the preset's lock: a concurrent `preset set` waits, then builds on this edit.
        async with store.locked(create_dir=True):
            return await _edit_once(store, edit_for(await asked), dry_run)
    finally:
        if not asked.done():
            asked.cancel()
        with contextlib.suppress(BaseException):
            await asked
        await store.close()


def _look_early(m: Machine, *, help_too: bool = False) -> None:
    """Whether the router runs (the plan names what a reload unloads) rides along with the agent's start, and
    for an edit that writes keys, the server's options (known_keys runs the same `PROGRAM --help`)."""
    if m.manager is None:
        return
    m.manager.ask_early()
    program = m.manager.literal_program()
    if help_too and program is not None:
        m.transport.ask_early([program, "--help"])


async def _no_keys() -> frozenset[str]:
    return frozenset()


async def _edit_once(store: PresetStore, edit: Edit, dry_run: bool) -> int:
    plan = await store.plan(edit)
    if plan.no_change:
        print(visible(f"{plan.snapshot.path}: nothing to change (no write, no reload)"))
        return 0
    print(visible_lines(plan.diff), end="" if plan.diff.endswith("\n") else "\n")
    if plan.router_running:
        hit = ", ".join(plan.will_unload) if plan.will_unload else "no loaded model"
        print(visible(f"reload will unload: {hit}"))
    else:
        print("the router is not running: it reads the file when it starts (no reload)")
    if dry_run:
        print("dry run: nothing written")
        return 0
    result = await store.apply(plan)
    bits = [f"wrote {plan.snapshot.path}"]
    if result.backup:
        bits.append(f"backup {result.backup}")
    bits.append("router reloaded" if result.reloaded else "no reload")
    print(visible("; ".join(bits)))
    return 0


async def cmd_show(ctx: CliContext, args: argparse.Namespace) -> int:
    async with ctx.machine(args.machine) as m:
        await m.transport.connect()
        snap = await PresetStore(m).read()
    if not snap.exists:
        print(visible(f"{snap.path}: no preset file yet"))
        return 0
    if args.model is None:
        print(visible_lines(snap.text), end="")
        return 0
    section = snap.doc.get(args.model)
    if section is None:
        err(f"no section [{args.model}] in {snap.path}")
        return 1
    print(visible(f"[{args.model}]"))
    for k, v in section.items():
        print(visible(f"{k} = {v}"))
    return 0


async def cmd_set(ctx: CliContext, args: argparse.Namespace) -> int:
    values = parse_assignments(args.assignments)
    for warning in exposed_by_argv(values):
        err(f"warning: {warning}")
    async with ctx.machine(args.machine) as m:
        _look_early(m, help_too=True)
        await m.transport.connect()
        return await _run_edit(m, lambda known: set_keys(args.model, values, known), args.dry_run)


async def cmd_unset(ctx: CliContext, args: argparse.Namespace) -> int:
    async with ctx.machine(args.machine) as m:
        _look_early(m)
        await m.transport.connect()
        return await _run_edit(m, lambda known: unset_keys(args.model, list(args.keys)), args.dry_run, adds_keys=False)


async def cmd_remove(ctx: CliContext, args: argparse.Namespace) -> int:
    async with ctx.machine(args.machine) as m:
        _look_early(m)
        await m.transport.connect()
        return await _run_edit(m, lambda known: remove_section(args.model), args.dry_run, adds_keys=False)


async def _discover(m: Machine, path: str) -> DiscoveredModel:
    t = m.transport
    path = (await t.expand(path)).rstrip("/")
    info = await t.stat(path)
    if info is None:
        raise PresetInputError(f"{path} does not exist on {m.name}")
    is_dir = not path.endswith(".gguf")
    folder = path if is_dir else posixpath.dirname(path)
    files = await t.list_files([folder], pattern="*.gguf", max_depth=1)
    found = classify(files, root=posixpath.dirname(folder) if is_dir else folder)
    for model in found.models:
        if (is_dir and posixpath.dirname(model.path) == folder) or path in model.parts:
            return model
    names = {posixpath.basename(f.path) for f in found.projectors + found.drafts}
    if posixpath.basename(path) in names:
        raise PresetInputError(f"{path} is a projector or draft file, not a model: add the model beside it instead")
    raise PresetInputError(f"no model file found at {path}")


async def cmd_add(ctx: CliContext, args: argparse.Namespace) -> int:
    async with ctx.machine(args.machine) as m:
        await m.transport.connect()
        model = await _discover(m, args.path)
        section = await model_files.new_section(m.transport, model)
        name = args.name or model.name
        try:
            return await _run_edit(m, lambda known: add_section(name, section, known), args.dry_run)
        except SectionExists as e:
            err(f"{e}; choose another name with --name")
            return 2  # a name the preset already has: bad input, like any other


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "preset",
        help="show or edit a router's preset file (models.ini)",
        description="Edit the preset file on the serving machine as text: every other line is "
        "kept byte for byte. Each edit is validated first, shows its diff, keeps a timestamped "
        "backup (the last 5), refuses a file that changed meanwhile, and reloads a running router.",
    )
    psub = p.add_subparsers(dest="preset_command", metavar="ACTION", required=True)

    def common(q: argparse.ArgumentParser, model: bool = True) -> None:
        q.add_argument("machine", help="machine name from config.toml")
        if model:
            q.add_argument("model", help='model section name ("*" for the global section)')
        q.add_argument(
            "--dry-run", action="store_true", help="print the diff and what a reload would unload; write nothing"
        )

    q = psub.add_parser(
        "show", help="print the preset, or one section", description="Print the preset file, or one model's section."
    )
    q.add_argument("machine", help="machine name from config.toml")
    q.add_argument("model", nargs="?", help="only this section")
    q.set_defaults(func=cmd_show)

    q = psub.add_parser(
        "set",
        help="set keys in a section (creating it if needed)",
        description="Set key=value pairs in one section; an empty value unsets the key.",
    )
    common(q)
    q.add_argument("assignments", nargs="+", metavar="key=value", help="e.g. ctx-size=8192 parallel=1")
    q.set_defaults(func=cmd_set)

    q = psub.add_parser("unset", help="remove keys from a section", description="Remove keys from one section.")
    common(q)
    q.add_argument("keys", nargs="+", metavar="key", help="keys to remove")
    q.set_defaults(func=cmd_unset)

    q = psub.add_parser(
        "add",
        help="add a model file or directory as a new section",
        description="Add a section for a GGUF file or a model directory on that machine, filled "
        "from what is found: projector beside it, draft head, MTP layers, measured defaults.",
    )
    q.add_argument("machine", help="machine name from config.toml")
    q.add_argument("path", help="a .gguf file or a model directory on that machine")
    q.add_argument("--name", help="section name (default: from the file or directory name)")
    q.add_argument("--dry-run", action="store_true", help="print the diff; write nothing")
    q.set_defaults(func=cmd_add)

    q = psub.add_parser(
        "remove",
        help="remove a model's section",
        description="Remove one section (its "
        "header, keys and comments); a loaded model of that name is unloaded by the reload.",
    )
    common(q)
    q.set_defaults(func=cmd_remove)
