"""The `docket` command line. Each module registers its commands on the shared app."""

from __future__ import annotations

import sys
from typing import Any

import typer

from docket.cli.app import app
from docket.cli.terminal import safe
from docket.errors import DocketError


def _register() -> None:
    # imported for their side effect: each adds its commands to `app`
    from docket.cli import answer, core, evaluate, import_cmd, serve, store  # noqa: F401


def _usage_line(e: Any) -> str:
    """A parse error (unknown option, value of the wrong type) as one line, like every other bad
    input, with the command to ask for help."""
    names: list[str] = []
    ctx = getattr(e, "ctx", None)
    while ctx is not None and getattr(ctx, "parent", None) is not None:
        names.insert(0, str(ctx.info_name))
        ctx = ctx.parent
    hint = f" (see: docket {' '.join(names + ['--help'])})"
    message = " ".join(e.format_message().split())
    if message.startswith("Got unexpected extra argument"):  # `docket ask how do refunds work`, `-q refund annual`
        message += "; a value of several words, such as a question, goes in quotes: \"...\""
    return message + hint


def main() -> None:
    _register()
    try:
        rc = app(standalone_mode=False)
    except DocketError as e:
        print(f"docket: error: {safe(str(e))}", file=sys.stderr)
        sys.exit(2)
    except typer.Abort:
        print("docket: aborted", file=sys.stderr)
        sys.exit(130)
    except Exception as e:
        # click's usage errors (Typer may vendor click, so they are recognised by shape, not class)
        if not (hasattr(e, "format_message") and isinstance(getattr(e, "exit_code", None), int)):
            raise
        if type(e).__name__ == "NoArgsIsHelpError":
            e.show()  # type: ignore[attr-defined]
        else:
            print(f"docket: error: {safe(_usage_line(e))}", file=sys.stderr)
        sys.exit(e.exit_code)  # type: ignore[attr-defined]
    sys.exit(rc if isinstance(rc, int) else 0)


__all__ = ["app", "main"]
