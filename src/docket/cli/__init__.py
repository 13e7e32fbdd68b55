"""The `docket` command line. Each module registers its commands on the shared app."""

from __future__ import annotations

import sys

from docket.cli.app import app
from docket.errors import DocketError


def _register() -> None:
    # imported for their side effect: each adds its commands to `app`
    from docket.cli import answer, core, evaluate, store  # noqa: F401


def main() -> None:
    _register()
    try:
        app()
    except DocketError as e:
        print(f"docket: error: {e}", file=sys.stderr)
        sys.exit(2)


__all__ = ["app", "main"]
