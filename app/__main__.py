"""`python -m app` and the `llamaherd` console script."""

from __future__ import annotations

import sys

from app.cli.main import main as _main


def main() -> None:
    sys.exit(_main())


if __name__ == "__main__":
    main()
