"""`python -m app` and the `llamaherd` console script."""

from __future__ import annotations

import sys


def main() -> None:
    from app.cli.history_main import is_history

    if is_history(sys.argv[1:]):  # answered without importing every other command's modules
        from app.cli.history_main import main as history_main

        sys.exit(history_main(sys.argv[1:]))
    from app.cli.main import main as _main

    sys.exit(_main())


if __name__ == "__main__":
    main()
