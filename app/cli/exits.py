"""The exit codes every entry of the command line maps its errors to: 2 a usage, input or config error, 1 a failure
named by the service layer, 130 an interrupt. Shared by the full parser and history's light entry."""

from __future__ import annotations

from collections.abc import Callable

from app.errors import BadInput, ConfigError, HerdError


def exit_code(run: Callable[[], int]) -> int:
    """`run()`'s code, or the one its error maps to, said on stderr. Imports are late: history's light entry
    must not pay for them when nothing fails."""
    try:
        return int(run())
    except KeyboardInterrupt:
        return 130
    except (ConfigError, BadInput) as e:
        from app.cli.output import err

        err(str(e))
        return 2
    except HerdError as e:
        from app.cli.output import err
        from app.cli.wording import say

        err(say(e))
        return 1
