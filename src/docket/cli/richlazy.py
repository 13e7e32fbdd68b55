"""rich's Console, Table and escape, imported on first use: `docket --help` and a usage error
need none of them, and rich costs about 0.1 s of start-up (tests/test_cli_startup.py). The
command modules bind these names at run time and the real ones for the type checker."""

from __future__ import annotations

from typing import Any


def Console(*args: Any, **kwargs: Any) -> Any:  # noqa: N802 - stands for the class
    from rich.console import Console as _Console

    return _Console(*args, **kwargs)


def Table(*args: Any, **kwargs: Any) -> Any:  # noqa: N802 - stands for the class
    from rich.table import Table as _Table

    return _Table(*args, **kwargs)


def escape(text: str) -> str:
    from rich.markup import escape as _escape

    return _escape(text)
