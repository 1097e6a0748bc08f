"""Typed failures of the service layer. Each carries a message fit to show an operator as it is."""

from __future__ import annotations

from app.errors import BadInput
from app.errors import HerdError as HerdError  # the base lives below config, which raises it too


class FitUnknown(HerdError):
    """A model's memory estimate could not be made (no readable header, a missing shard, a setting not understood)."""


class RouterError(HerdError):
    """The router could not be asked, or refused."""


class RouterNotRunning(RouterError):
    """A command needs the router of `machine`, which is not running; `state` and `reason` say what it is instead."""

    def __init__(self, machine: str, state: str, reason: str = "") -> None:
        self.machine = machine
        self.state = state
        self.reason = reason
        super().__init__(f"the router on {machine} is not running ({state}" + (f": {reason})" if reason else ")"))


class RouterUnreachable(RouterError):
    """No answer at all: connection refused, reset, timed out."""


class RouterRefused(RouterError):
    """The router answered with an HTTP error; `message` is the router's own words."""

    def __init__(self, status: int, message: str, method: str = "", path: str = "") -> None:
        self.status = status
        self.message = message
        self.method = method
        self.path = path
        where = f"{method} {path}: " if path else ""
        super().__init__(f"{where}router answered {status}: {message}")


class AuthRefused(RouterRefused):
    """401: the API key was missing or wrong."""


class BadAnswer(RouterError):
    """The router answered, but not with the JSON shape expected."""


class ModelFailed(HerdError):
    """A model failed to load: exits with code, and (where known) the model's last log lines."""

    def __init__(self, model: str, exit_code: int | None, log_tail: list[str] | None = None) -> None:
        self.model = model
        self.exit_code = exit_code
        self.log_tail = list(log_tail or [])
        msg = f"model {model} failed to load (exit code {exit_code})"
        if self.log_tail:
            msg += "\n" + "\n".join("  " + line for line in self.log_tail)
        super().__init__(msg)


class TransportError(HerdError):
    """A machine could not be reached or a command on it could not run."""


class HostKeyError(TransportError):
    """An unknown or changed ssh host key; the message says how to accept it."""


class LifecycleError(HerdError):
    """A router could not be started, adopted or stopped; carries the log's last lines."""

    def __init__(self, message: str, log_tail: list[str] | None = None) -> None:
        self.log_tail = list(log_tail or [])
        full = message
        if self.log_tail:
            full += "\n" + "\n".join("  " + line for line in self.log_tail)
        super().__init__(full)


class ProgramNotFound(LifecycleError):
    """No llama-server to run on this machine; `how_to` says how to get one (in words for any front end)."""

    def __init__(self, program: str, how_to: str) -> None:
        self.program = program
        self.how_to = how_to
        super().__init__(f"{program} was not found: {how_to}")


class PresetError(HerdError):
    """A preset edit refused before anything was written: names the field and why.

    `field` is the settings-form field whose value was refused (its canonical key), `key` the key of the file the
    refusal is about; either may be None. A form marks what they name; the message is for reading, not parsing.
    """

    def __init__(self, message: str, *, key: str | None = None, field: str | None = None) -> None:
        self.key = key
        self.field = field
        super().__init__(message)


class PresetInputError(PresetError, BadInput):
    """A value, key or section name the preset cannot hold: bad input (the command line exits 2, not 1)."""


class SectionExists(PresetInputError):
    """A new section would take a name the preset already has."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"section [{name}] already exists")


class WriteFailed(TransportError):
    """A file could not be written: the original is as it was and no temporary file is left. `cause` is the
    reason in a few words ("no space left on device", "read-only file system", ...)."""

    def __init__(self, machine: str, path: str, cause: str) -> None:
        self.machine = machine
        self.path = path
        self.cause = cause
        super().__init__(f"{machine}: cannot write {path}: {cause}")


class RouterNotAnswering(RouterUnreachable):
    """Connected, but no (complete) answer within the bound: a stopped, wedged or drip-feeding router."""


class SentNoAnswer(RouterNotAnswering):
    """A request was sent and timed out before any answer: it may still take effect."""


class AnswerTooBig(BadAnswer):
    """An answer (body, event-stream line or event) over llamaherd's size limit; the request was ended."""
