"""The Typer application every command module registers on."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="docket",
    help="Context assembly for RAG: which passages go into the prompt, in what form and order, and why.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # help texts are plain text: rich markup would eat every "[history]" or "[default]" in them
    # (tests/test_cli_help.py renders every --help), and the help needs no rich import to start
    rich_markup_mode=None,
)
