"""`llamaherd key MACHINE`: the router's API key, printed on purpose and alone, for scripts and curl."""

from __future__ import annotations

import argparse

from app.cli.context import CliContext
from app.cli.output import err
from app.errors import ConfigError


async def cmd_key(ctx: CliContext, args: argparse.Namespace) -> int:
    async with ctx.machine(args.machine) as m:
        if m.manager is None:
            key = m.cfg.api_key()
            if key is None:
                raise ConfigError(
                    f"{m.name} is attach-only (url = {m.cfg.url}) and sets no api_key_env: "
                    "llamaherd holds no key for it"
                )
        else:
            await m.transport.connect()
            key = await m.manager.read_key() or m.cfg.api_key()
            if key is None:
                err(
                    f"no API key on {m.name} yet: llamaherd makes one when it starts the router there "
                    f"(llamaherd start {m.name}; a router started before that runs open, without one)"
                )
                return 1
    print(key)
    return 0


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "key",
        help="print the API key of a machine's router (only the key)",
        description="Print the API key the machine's router requires, and nothing else, for clients: "
        'curl -H "Authorization: Bearer $(llamaherd key MACHINE)" ... It is read from the serving machine '
        "(or from the machine's api_key_env).",
    )
    p.add_argument("machine", help="machine name from config.toml")
    p.set_defaults(func=cmd_key)
