"""`docket demo`, `docket assemble` and `docket budget`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from docket.brief.formats import get as get_format
from docket.brief.formats import text_formats
from docket.cli import budgeting as bg
from docket.cli import options as opt
from docket.cli.app import app
from docket.cli.terminal import console as terminal_console
from docket.errors import InputError

if TYPE_CHECKING:
    from rich.table import Table
else:  # rich loads when a command prints (docket.cli.richlazy)
    from docket.cli.richlazy import Table

if TYPE_CHECKING:  # loaded inside the commands: `docket --help` starts without numpy (tests/test_cli_startup.py)
    from collections.abc import Sequence

    from docket.brief.result import Brief
    from docket.model import Candidate, Chunk
    from docket.store.access import Principal

FORMAT_HELP = "Fence format: " + "; ".join(f"{n} ({get_format(n).summary})" for n in text_formats()) + ". Default xml."

parse_date = opt.parse_date


load_policy_with = opt.load_policy_with
emit_json = opt.emit_json


@app.command("assemble")
def assemble_cmd(
    question: Annotated[str, typer.Option("--question", "-q", help="The user's question.", callback=opt.question)],
    store: Annotated[Path | None, typer.Option("--store", help="Chunk records, JSONL (docs/store.md, chunk records).",
                                               callback=opt.input_file)] = None,
    candidates: Annotated[Path | None, typer.Option("--candidates", help='Ranked {"id","score"} JSONL, best first.',
                                                    callback=opt.input_file)] = None,
    files: Annotated[list[Path] | None, typer.Option(
        "--file", help="A file the user attached (pdf, docx, md, html, txt; repeatable): it is the context, sent whole "
        "when it fits and searched inside when not. Replaces --store.", callback=opt.input_file)] = None,
    whole_corpus: opt.WholeCorpus = None,
    model_preset: opt.ModelPreset = None,
    route: opt.Route = False,
    route_llm: opt.RouteLlm = None,
    html_path: opt.Html = None,
    budget: opt.Budget = None,
    floor: opt.Floor = None,
    policy_path: opt.PolicyPath = None,
    as_of: opt.AsOf = None,
    fmt: Annotated[str | None, typer.Option("--format", help=FORMAT_HELP, callback=opt.choice(*text_formats()))] = None,
    as_json: opt.AsJson = False,
    explain: opt.Explain = False,
    llm: opt.Llm = None,
    model: opt.Model = None,
    allow_domain: opt.AllowDomain = None,
    strip_links: opt.StripLinks = False,
    principal: Annotated[str | None, typer.Option("--principal", help="Who asks (a user); without it only public chunks.",
                                                  callback=opt.name)] = None,
    groups: Annotated[list[str] | None, typer.Option("--groups", help="The principal's groups (comma-separated).")] = None,
    history: opt.History = None,
    structured: opt.Structured = False,
) -> None:
    """Assemble the brief for one question from a chunk file (and optional ranked candidates), or
    from files the user attached."""
    from docket.api import Session
    from docket.cli.show import explain_on_stderr, print_brief
    from docket.history import load_history
    from docket.io import check_chunks, load_candidates, load_chunks
    from docket.store.access import Principal
    from docket.store.base import MemoryStore

    opt.requires(model, llm or route_llm, "--model", "--llm")
    opt.requires(allow_domain, llm, "--allow-domain", "--llm")
    opt.requires(strip_links, llm, "--strip-links", "--llm")
    opt.requires(structured, llm, "--structured", "--llm")
    if groups and not principal:
        raise InputError("needs --principal (groups belong to someone)", field="--groups")
    who = Principal(principal, frozenset(opt.split_names(groups, "--groups"))) if principal is not None else None
    policy = opt.mode_policy(load_policy_with(policy_path, fmt), model_preset, route, route_llm)
    turns = load_history(history) if history else None
    if files and (store is not None or candidates is not None):
        raise InputError("an attached file is the context: give --file or --store/--candidates, not both", field="--file")
    if files and whole_corpus is not None:
        raise InputError("an attached file is the context: --whole-corpus/--retrieve do not apply", field="--file")
    if not files and store is None:
        raise InputError("is needed (or attach files with --file)", field="--store")
    mem = MemoryStore([])
    if store is not None:
        chunks = load_chunks(store)
        check_chunks(chunks)
        mem = MemoryStore(chunks)
        _warn_if_none_readable(store, chunks, who)
    cands = load_candidates(candidates, mem) if candidates else None
    if cands and candidates:
        _warn_if_scores_rise(candidates, cands)
    session = Session(mem, policy=policy)
    brief = session.assemble(question, cands, store=mem, history=turns, principal=who, budget=budget, floor=floor,
                             as_of=parse_date(as_of), attachments=list(files or []) or None, whole_corpus=whole_corpus,
                             router=opt.router_for(route_llm, model),
                             generator=opt.summary_generator(policy, llm, model))
    opt.write_html(html_path, brief, brief.ranked)
    if as_json and explain:
        explain_on_stderr(brief)
    if llm:  # exit 0 clean answer, 1 check findings, 3 model failed (the brief is printed anyway)
        from docket.cli.answer_show import answer_cli

        raise typer.Exit(answer_cli(brief, llm, model, as_json=as_json,
                                    print_brief=lambda console: print_brief(console, brief, explain=explain),
                                    allowed_domains=allow_domain or [], strip=strip_links, structured=structured))
    if as_json:
        emit_json(brief.to_json())
        return
    console = terminal_console()
    print_brief(console, brief, explain=explain)


def _warn_if_scores_rise(path: Path, cands: Sequence[Candidate]) -> None:
    """A candidates file whose scores only rise down the list is a ranking written worst first, or
    distances (lower = closer) where similarities belong: docket reads the order as the ranking and
    a higher score as better, so say so on stderr (the brief itself is what the input asks for)."""
    scores = [c.score for c in cands]
    if len(scores) > 1 and scores[0] < scores[-1] and all(a <= b for a, b in zip(scores, scores[1:])):
        typer.echo(f"docket: warning: {path}: the scores rise down the list ({scores[0]:g} first, {scores[-1]:g} "
                   "last); docket reads the lines as the ranking, best first, and a higher score as better: if these "
                   "are distances (lower = closer), write similarities (cosine: 1 - distance), best first", err=True)


def _warn_if_none_readable(path: Path, chunks: Sequence[Chunk], who: Principal | None) -> None:
    """The operator holds the file, so say on stderr (never in the brief) why every chunk of it
    will be skipped: an `acl` on each that this principal (or, without --principal, anonymous)
    does not match; otherwise the brief only says the pool was empty."""
    from docket.store.access import readable_chunks

    if chunks and not readable_chunks(chunks, who):
        asker = f"principal {who.name!r}" if who is not None else "an asker without --principal"
        typer.echo(f"docket: warning: {path}: each of its {len(chunks)} chunk(s) has an acl that {asker} does not "
                   "match, so none can be used; pass --principal NAME (and --groups) of a reader it lists", err=True)


@app.command("demo")
def demo_cmd(
    budget: Annotated[int, typer.Option("--budget", help="Evidence budget for the refund question.", callback=opt.positive)] = 250,
    as_json: Annotated[bool, typer.Option("--json", help="Print both briefs as JSON.")] = False,
) -> None:
    """The spec's Nimbus example: eight chunks, the refund question and the student-discount question."""
    from docket.assemble import assemble, rank_by_cosine
    from docket.cli.show import print_brief, print_ranking, screened_out
    from docket.demo import DISCOUNT_QUESTION, REFUND_QUESTION, nimbus_chunks
    from docket.embed import default_embedder
    from docket.policy import Policy
    from docket.store.base import MemoryStore

    chunks = nimbus_chunks()
    store = MemoryStore(chunks)
    embedder = default_embedder()
    policy = Policy()
    briefs: dict[str, Brief] = {}
    console = terminal_console()
    for q in (REFUND_QUESTION, DISCOUNT_QUESTION):
        ranked = rank_by_cosine(q, chunks, embedder)
        brief = assemble(q, ranked, store=store, policy=policy, budget=budget, embedder=embedder)
        briefs[q] = brief
        if as_json:
            continue
        console.rule(f"[bold]{q}")
        print_ranking(console, ranked, screened_out(brief))
        print_brief(console, brief, explain=True)
    if as_json:
        emit_json({q: b.to_json() for q, b in briefs.items()})


@app.command("budget")
def budget_cmd(
    input_target: bg.InputTarget = 6000,
    system: bg.SystemTokens = None,
    history: bg.HistoryTokens = 900,
    question: bg.QuestionTokens = 120,
    answer_reserve: bg.AnswerReserve = 0,
    tags: bg.Tags = 35,
    chunk_tokens: bg.ChunkTokens = 350,
    price: bg.Price = 3.0,
    per_day: bg.PerDay = 50_000,
    store: bg.StoreFile = None,
    ask: bg.Ask = None,
    history_file: bg.HistoryFile = None,
    policy_path: opt.PolicyPath = None,
    corpus_tokens: bg.CorpusTokens = None,
    cache_read: bg.CacheRead = None,
    cache_write: bg.CacheWrite = None,
    cache_ttl: bg.CacheTtl = None,
    model_preset: opt.ModelPreset = None,
) -> None:
    """The prompt's contract in tokens: the evidence budget derived backward, and what it costs."""
    bg.run_budget(bg.BudgetArgs(**locals()))


@app.command("presets")
def presets_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Print every preset with its sources as JSON.")] = False,
) -> None:
    """The model presets `--model-preset` takes: window, input target, answer reserve, counter, source."""
    from docket.presets import presets

    items = presets()
    if as_json:
        emit_json({name: p.to_json() for name, p in items.items()})
        return
    t = Table(title="Model presets (docket/data/presets.toml)")
    for col in ("preset", "model", "window", "input target", "answer reserve", "evidence", "counter", "checked"):
        t.add_column(col, justify="right" if col in ("window", "input target", "answer reserve") else "left",
                     no_wrap=col == "preset")
    for name, p in items.items():
        t.add_row(name, p.label, f"{p.context_window:,}", f"{p.input_target:,}", f"{p.answer_reserve:,}",
                  f"{p.evidence_min:,}-{p.evidence_max:,}", p.tokenizer + ("" if p.tokenizer_exact else " (stand-in)"),
                  p.checked)
    console = terminal_console()
    console.print(t)
    for name, p in items.items():
        console.print(f"{name}: {p.source}", soft_wrap=True, markup=False)
