"""Failures shared by every layer: the base class, and a config file that cannot be used.

Here, below both config and services, so that config.py never imports the service layer.
"""

from __future__ import annotations


class HerdError(Exception):
    """Base of every failure llamaherd reports on purpose. Each carries a message fit to show an operator as it is."""


class ConfigError(HerdError):
    """A config file that cannot be used: names the file, the key and, where known, the line."""
