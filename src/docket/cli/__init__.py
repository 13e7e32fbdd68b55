"""The `docket` command line. Each module registers its commands on the shared app."""

from __future__ import annotations

import sys
from typing import Any

import typer

from docket.cli.app import app
from docket.cli.terminal import safe
from docket.errors import DocketError

#: the order `docket --help` lists the commands in: a new user's path first (try it, index, ask,
#: assemble from a file, check an answer, evaluate), then tuning, the store's upkeep, and the
#: service. Typer lists commands in registration order (the command groups `keys` and `llm`
#: after the commands); `_register` sorts the registrations by this. A new command must be placed
#: here (tests/test_cli_help.py).
HELP_ORDER = ("demo", "index", "ask", "assemble", "check", "eval",
              "calibrate", "budget", "presets",
              "import", "export", "delete", "features", "principal",
              "serve", "keys", "llm")


def _help_place(info: Any) -> int:
    name = info.name
    return HELP_ORDER.index(name) if name in HELP_ORDER else len(HELP_ORDER)


def _register() -> None:
    # imported for their side effect: each adds its commands to `app`
    from docket.cli import answer, core, evaluate, import_cmd, serve, store  # noqa: F401

    app.registered_commands.sort(key=_help_place)  # stable: an unplaced command keeps its place at the end
    app.registered_groups.sort(key=_help_place)


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
