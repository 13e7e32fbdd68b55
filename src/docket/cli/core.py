"""`docket demo`, `docket assemble` and `docket budget`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from docket.assemble import assemble, rank_by_cosine
from docket.brief.formats import get as get_format
from docket.brief.formats import text_formats
from docket.brief.result import Brief
from docket.cli import options as opt
from docket.cli.app import app
from docket.cli.show import print_brief, print_ranking
from docket.demo import DISCOUNT_QUESTION, REFUND_QUESTION, nimbus_chunks
from docket.embed import default_embedder
from docket.errors import InputError
from docket.io import check_chunks, load_candidates, load_chunks
from docket.policy import Policy, load_policy
from docket.store.access import Principal
from docket.store.base import MemoryStore

FORMAT_HELP = "Fence format: " + "; ".join(f"{n} ({get_format(n).summary})" for n in text_formats()) + ". Default xml."

parse_date = opt.parse_date


def load_policy_with(path: Path | None, fmt: str | None = None) -> Policy:
    policy = load_policy(path)
    if fmt is not None:
        policy = policy.updated(render={"format": opt.check_choice(fmt, "--format", tuple(text_formats()))})
    return policy


def emit_json(payload: dict) -> None:  # type: ignore[type-arg]
    sys.stdout.write(json.dumps(payload, ensure_ascii=False, indent=2) + "\n")


@app.command("assemble")
def assemble_cmd(
    store: Annotated[Path, typer.Option("--store", help="Chunk records, JSONL (DESIGN.md contract).", callback=opt.input_file)],
    question: Annotated[str, typer.Option("--question", "-q", help="The user's question.", callback=opt.question)],
    candidates: Annotated[Path | None, typer.Option("--candidates", help='Ranked {"id","score"} JSONL, best first.',
                                                    callback=opt.input_file)] = None,
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
) -> None:
    """Assemble the brief for one question from a chunk file (and optional ranked candidates)."""
    from docket.api import Session
    from docket.history import load_history

    opt.requires(model, llm, "--model", "--llm")
    opt.requires(allow_domain, llm, "--allow-domain", "--llm")
    opt.requires(strip_links, llm, "--strip-links", "--llm")
    if groups and not principal:
        raise InputError("needs --principal (groups belong to someone)", field="--groups")
    who = Principal(principal, frozenset(opt.check_name(g.strip(), "--groups") for item in groups or []
                                         for g in item.split(",") if g.strip())) if principal is not None else None
    policy = load_policy_with(policy_path, fmt)
    turns = load_history(history) if history else None
    chunks = load_chunks(store)
    check_chunks(chunks)
    mem = MemoryStore(chunks)
    cands = load_candidates(candidates, mem) if candidates else None
    session = Session(mem, policy=policy)
    brief = session.assemble(question, cands, store=mem, history=turns, principal=who, budget=budget, floor=floor,
                             as_of=parse_date(as_of))
    if llm:  # exit 0 clean answer, 1 check findings, 3 model failed (the brief is printed anyway)
        from docket.cli.answer_show import answer_cli

        raise typer.Exit(answer_cli(brief, llm, model, as_json=as_json,
                                    print_brief=lambda console: print_brief(console, brief, explain=explain),
                                    allowed_domains=allow_domain or [], strip=strip_links))
    if as_json:
        emit_json(brief.to_json())
        return
    console = Console()
    print_brief(console, brief, explain=explain)


@app.command("demo")
def demo_cmd(
    budget: Annotated[int, typer.Option("--budget", help="Evidence budget for the refund question.", callback=opt.positive)] = 250,
    as_json: Annotated[bool, typer.Option("--json", help="Print both briefs as JSON.")] = False,
) -> None:
    """The spec's Nimbus example: eight chunks, the refund question and the student-discount question."""
    chunks = nimbus_chunks()
    store = MemoryStore(chunks)
    embedder = default_embedder()
    policy = Policy()
    briefs: dict[str, Brief] = {}
    console = Console()
    for q in (REFUND_QUESTION, DISCOUNT_QUESTION):
        ranked = rank_by_cosine(q, chunks, embedder)
        brief = assemble(q, ranked, store=store, policy=policy, budget=budget, embedder=embedder)
        briefs[q] = brief
        if as_json:
            continue
        console.rule(f"[bold]{q}")
        print_ranking(console, ranked, policy.pack.floor)
        print_brief(console, brief, explain=True)
    if as_json:
        emit_json({q: b.to_json() for q, b in briefs.items()})


@app.command("budget")
def budget_cmd(
    input_target: Annotated[int, typer.Option("--input-target", help="Input tokens you choose per query.",
                                              callback=opt.positive)] = 6000,
    system: Annotated[int | None, typer.Option("--system", help="System prompt tokens (default: docket's own brief).",
                                               callback=opt.non_negative)] = None,
    history: Annotated[int, typer.Option("--history", help="Chat history tokens.", callback=opt.non_negative)] = 900,
    question: Annotated[int, typer.Option("--question-tokens", help="Question tokens (capped).",
                                          callback=opt.non_negative)] = 120,
    answer_reserve: Annotated[int, typer.Option("--answer-reserve", help="Tokens reserved for the answer.",
                                                callback=opt.non_negative)] = 0,
    tags: Annotated[int, typer.Option("--tags", help="Tags + header tokens per passage.", callback=opt.non_negative)] = 35,
    chunk_tokens: Annotated[int, typer.Option("--chunk-tokens", help="Typical chunk tokens after cleaning.",
                                              callback=opt.positive)] = 350,
    price: Annotated[float, typer.Option("--price", help="USD per million input tokens.", callback=opt.finite(0.0))] = 3.0,
    per_day: Annotated[int, typer.Option("--queries-per-day", help="Query volume.", callback=opt.non_negative)] = 50_000,
    store: Annotated[Path | None, typer.Option("--store", help="Show which passages fit for a real question.",
                                               callback=opt.input_file)] = None,
    ask: Annotated[str | None, typer.Option("--question", "-q", help="The question to pack (with --store).",
                                            callback=opt.question)] = None,
    history_file: Annotated[Path | None, typer.Option("--history-file", help="Count a real chat history (JSON/JSONL "
                                                      "turns), capped by the policy's history budget, instead of --history.",
                                                      callback=opt.input_file)] = None,
    policy_path: opt.PolicyPath = None,
) -> None:
    """The prompt's contract in tokens: the evidence budget derived backward, and what it costs."""
    from docket.brief import layout
    from docket.context import Context
    from docket.tokens import default_counter

    opt.requires(ask, store, "--question", "--store")
    for name, v in (("--input-target", input_target), ("--chunk-tokens", chunk_tokens)):
        if v <= 0:
            raise InputError(f"must be positive, got {v}", field=name)
    for name, v in (("--history", history), ("--question-tokens", question), ("--answer-reserve", answer_reserve),
                    ("--tags", tags), ("--queries-per-day", per_day)):
        if v < 0:
            raise InputError(f"must not be negative, got {v}", field=name)
    pol = load_policy_with(policy_path)
    turns = None
    console = Console()
    if history_file is not None:
        from docket.history import load_history, prepare
        from docket.model import Trace

        turns = load_history(history_file)
        kept = prepare(turns, pol.history, default_counter(), Trace())
        history = kept.tokens
        console.print(f"history: {len(kept.messages)} of {kept.given} turn(s) kept, {kept.tokens} tokens "
                      f"(history budget {pol.history.max_tokens}; newest kept word for word)", soft_wrap=True)
    if system is None:
        ctx = Context(question="", store=MemoryStore([]), policy=pol, counter=default_counter())
        system = ctx.tokens(layout.system_text(ctx, "xml")) + ctx.tokens(layout.format_text(ctx))
    evidence = input_target - answer_reserve - system - history - question
    t = Table(title="The prompt's contract", show_header=False)
    t.add_column("item")
    t.add_column("tokens", justify="right")
    for k, v in (("input target", input_target), ("- answer reserve", answer_reserve), ("- system rules + format", system),
                 ("- history", history), ("- question", question), ("= evidence budget", evidence)):
        t.add_row(k, f"{v:,}")
    console.print(t)
    if evidence <= 0:
        raise InputError(f"leaves {evidence} tokens for evidence; raise it or cut history", field="--input-target")
    naive = evidence // chunk_tokens
    real = evidence // (chunk_tokens + tags)
    console.print(f"passages if you forget the tags: {naive}  (would overflow by {naive * (chunk_tokens + tags) - evidence:,} "
                  f"tokens)" if naive * (chunk_tokens + tags) > evidence else f"passages if you forget the tags: {naive}",
                  soft_wrap=True)
    console.print(f"passages that really fit ({chunk_tokens} + {tags} tags): {real}", soft_wrap=True)
    extra = 1_000 * per_day / 1e6 * price
    console.print(f"+1,000 evidence tokens at USD {price}/M and {per_day:,} queries/day: USD {extra:,.0f}/day, "
                  f"USD {extra * 30:,.0f}/month", soft_wrap=True)
    if store is not None:
        if not ask:
            raise InputError("is needed with --store", field="--question")
        mem = MemoryStore(load_chunks(store))
        brief = assemble(ask, store=mem, policy=pol, budget=evidence, history=turns)
        fit = Table(title=f"Passages that fit {evidence:,} evidence tokens for: {ask}")
        for col in ("label", "chunks", "section", "tokens"):
            fit.add_column(col)
        from docket.brief.render import render_passage

        for p, (label, s) in zip(brief.passages, brief.sources.items()):
            fit.add_row(label, ", ".join(s["chunks"]), s["section"] or "",
                        str(default_counter().count(render_passage(p, label, pol.render).block)))
        console.print(fit)
        console.print(f"documents block: {brief.tokens['documents']} tokens, found: {brief.found}")
