"""`llamaherd config example`: the example config, shipped in the package, so a pip-installed user has it too."""

from __future__ import annotations

import argparse
import sys
from importlib import resources

from app.config import Config


def example_config_text() -> str:
    return resources.files("app").joinpath("config.example.toml").read_text(encoding="utf-8")


def cmd_config_example(config: Config, args: argparse.Namespace) -> int:
    sys.stdout.write(example_config_text())
    return 0


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "config",
        help="about the config file (`config example` prints one with every key)",
        description="About config.toml.",
    )
    what = p.add_subparsers(dest="config_command", metavar="WHAT", required=True)
    e = what.add_parser(
        "example",
        help="print an example config.toml that documents every key",
        description="Print an example config.toml that documents every key, e.g. "
        "`llamaherd config example > ~/.config/llamaherd/config.toml`, then edit it.",
    )
    e.set_defaults(func=cmd_config_example, sync=True, needs_config=False)
