"""Options shared by the commands that assemble a brief (`assemble`, `ask`), declared once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from docket.errors import InputError

Budget = Annotated[int | None, typer.Option("--budget", help="Evidence budget: tokens of the documents block.")]
Floor = Annotated[float | None, typer.Option("--floor", help="Score floor (default 0.40, a MiniLM cosine).")]
PolicyPath = Annotated[Path | None, typer.Option("--policy", help="Policy TOML (every knob of every move).")]
AsOf = Annotated[str | None, typer.Option("--as-of", help="Use the versions in force on this date (YYYY-MM-DD).")]
AsJson = Annotated[bool, typer.Option("--json", help="Print the `docket assemble --json` contract on stdout.")]
Explain = Annotated[bool, typer.Option("--explain", help="Print every decision with its numbers.")]
Llm = Annotated[str | None, typer.Option("--llm", help="Also answer with this model and check the answer: local, "
                                         "http://host:port/v1, openai, anthropic, ollama://host:port.")]
Model = Annotated[str | None, typer.Option("--model", help="Model name for --llm.")]
AllowDomain = Annotated[list[str] | None, typer.Option(
    "--allow-domain", help="With --llm: a domain the answer's links and images may point to (subdomains too). Repeatable.")]
StripLinks = Annotated[bool, typer.Option(
    "--strip-links", help="With --llm: also give the answer with disallowed links and images removed.")]


def check_budget(budget: int | None) -> None:
    if budget is not None and budget < 1:
        raise InputError(f"must be a positive number of tokens, got {budget}", field="--budget")
