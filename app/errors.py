"""Failures shared by every layer: the base class, and a config file that cannot be used.

Here, below both config and services, so that config.py never imports the service layer.
"""

from __future__ import annotations


class HerdError(Exception):
    """Base of every failure llamaherd reports on purpose. Each carries a message fit to show an operator as it is."""


class BadInput(HerdError):
    """Input refused before anything changed (a value a preset cannot hold, a name that cannot be a section): the
    command line exits 2 for it, as for any usage error, not 1 (a failure of something that was tried)."""


class ConfigError(HerdError):
    """A config file that cannot be used: names the file, the key and, where known, the line."""
