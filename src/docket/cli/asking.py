"""`docket ask`, behind its options: the options as one frozen `AskArgs`, checked, turned into a
`Session.ask` call, and the result printed. The command in docket.cli.store only declares them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from docket.cli import options as opt
from docket.cli.terminal import console as terminal_console
from docket.errors import InputError

if TYPE_CHECKING:  # loaded when the command runs: `docket --help` starts without numpy (tests/test_cli_startup.py)
    from rich.console import Console

    from docket.api import AskResult
    from docket.store.protocol import Filters

# --- the options only `docket ask` takes ------------------------------------------------------------
Principal = Annotated[str | None, typer.Option("--principal", help="Who asks; without it only public chunks.",
                                               callback=opt.name)]
Groups = Annotated[list[str] | None, typer.Option("--groups", help="Extra groups of the principal (comma-separated).")]
Candidates = Annotated[int, typer.Option("--candidates", help="How many retrieved chunks go to the assembler.",
                                         callback=opt.int_range(1, 100_000))]
SearchMode = Annotated[str, typer.Option("--mode", help="fused (default), dense or bm25.",
                                         callback=opt.choice("fused", "dense", "bm25"))]
Doc = Annotated[list[str] | None, typer.Option("--doc", help="Only these documents (repeatable).")]
SourceType = Annotated[list[str] | None, typer.Option("--source-type", help="Only these source types.")]
Status = Annotated[list[str] | None, typer.Option("--status", help="Only these statuses.")]
Since = Annotated[str | None, typer.Option("--since", help="Only chunks dated on or after (YYYY-MM-DD).",
                                           callback=opt.iso_date)]
Until = Annotated[str | None, typer.Option("--until", help="Only chunks dated on or before (YYYY-MM-DD).",
                                           callback=opt.iso_date)]


@dataclass(frozen=True)
class AskArgs:
    """Every option of `docket ask`, as parsed (names as the command's parameters)."""

    question: str
    db: str = "docket.db"
    principal: str | None = None
    groups: list[str] | None = None
    budget: int | None = None
    floor: float | None = None
    as_of: str | None = None
    policy_path: Path | None = None
    candidates: int = 50
    mode: str = "fused"
    doc: list[str] | None = None
    source_type: list[str] | None = None
    status: list[str] | None = None
    since: str | None = None
    until: str | None = None
    as_json: bool = False
    explain: bool = False
    exact: bool = False
    llm: str | None = None
    model: str | None = None
    allow_domain: list[str] | None = None
    strip_links: bool = False
    history: Path | None = None
    whole_corpus: bool | None = None
    model_preset: str | None = None
    route: bool = False
    route_llm: str | None = None
    html_path: Path | None = None
    structured: bool = False


def run_ask(a: AskArgs) -> None:
    """Check the options, ask through a read-only Session, print (or answer with --llm)."""
    from docket.api import Session
    from docket.history import load_history

    _check(a)
    filters = _filters(a)
    policy = opt.mode_policy(opt.load_policy_with(a.policy_path), a.model_preset, a.route, a.route_llm)
    router = opt.router_for(a.route_llm, a.model)
    turns = load_history(a.history) if a.history else None
    with Session.open(a.db, policy=policy, read_only=True) as session:
        res = session.ask(a.question, principal=a.principal, groups=opt.split_names(a.groups, "--groups"),
                          filters=filters, k=a.candidates, mode=a.mode, history=turns, budget=a.budget, floor=a.floor,
                          as_of=opt.parse_date(a.as_of), whole_corpus=a.whole_corpus, router=router,
                          generator=opt.summary_generator(policy, a.llm, a.model))
        if not res.brief.found and not res.brief.sources:
            _warn_if_empty(session.stats())

    _show(a, res)


def _warn_if_empty(stats: dict[str, object]) -> None:
    """The operator holds the store: say on stderr when it is empty, which the brief cannot (it
    says only that nothing was ranked). The location is redacted (no password of a URL)."""
    if stats.get("chunks") == 0:
        where = stats.get("location")
        typer.echo(f"docket: warning: the store {where} holds no chunks; index documents into it first "
                   f"(docket index PATH --db {where})", err=True)


def _check(a: AskArgs) -> None:
    opt.requires(a.model, a.llm or a.route_llm, "--model", "--llm")
    opt.requires(a.allow_domain, a.llm, "--allow-domain", "--llm")
    opt.requires(a.strip_links, a.llm, "--strip-links", "--llm")
    opt.requires(a.structured, a.llm, "--structured", "--llm")
    if a.groups and not a.principal:
        raise InputError("needs --principal (groups belong to someone)", field="--groups")


def _filters(a: AskArgs) -> Filters:
    """--doc, --source-type, --status, --since and --until as the search's filters."""
    from docket.store.protocol import Filters

    date_from, date_to = opt.parse_date(a.since, "--since"), opt.parse_date(a.until, "--until")
    if date_from and date_to and date_from > date_to:
        raise InputError(f"{a.since} is after --until {a.until}: no chunk can match", field="--since")
    return Filters(docs=opt.split_names(a.doc, "--doc"), source_types=opt.split_names(a.source_type, "--source-type"),
                   statuses=tuple(s.lower() for s in opt.split_names(a.status, "--status")),
                   date_from=date_from, date_to=date_to, exact=a.exact)


def _show(a: AskArgs, res: AskResult) -> None:
    """The brief on the terminal or as JSON; with --llm, the answer and its check too (exit 0 clean
    answer, 1 check findings, 3 model failed: the brief is printed anyway)."""
    from docket.cli.show import explain_on_stderr, print_brief, print_ranking, screened_out

    ranked, brief = res.candidates, res.brief
    opt.write_html(a.html_path, brief, ranked)
    if a.as_json and a.explain:
        explain_on_stderr(brief)

    def show(console: Console) -> None:
        if ranked:  # no retrieval ran (routing, the whole corpus): nothing was ranked
            print_ranking(console, ranked[:10], screened_out(brief))
        print_brief(console, brief, explain=a.explain)

    if a.llm:
        from docket.cli.answer_show import answer_cli

        raise typer.Exit(answer_cli(brief, a.llm, a.model, as_json=a.as_json, print_brief=show,
                                    allowed_domains=a.allow_domain or [], strip=a.strip_links,
                                    structured=a.structured))
    if a.as_json:
        opt.emit_json(brief.to_json())
        return
    show(terminal_console())


__all__ = ["AskArgs", "run_ask"]
