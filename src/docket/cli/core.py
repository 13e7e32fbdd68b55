"""`docket demo`, `docket assemble` and `docket budget`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from docket.brief.formats import get as get_format
from docket.brief.formats import text_formats
from docket.cli import options as opt
from docket.cli.app import app
from docket.cli.terminal import console as terminal_console
from docket.cli.terminal import json_text
from docket.errors import InputError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table
else:  # rich loads when a command prints (docket.cli.richlazy)
    from docket.cli.richlazy import Console, Table

if TYPE_CHECKING:  # loaded inside the commands: `docket --help` starts without numpy (tests/test_cli_startup.py)
    from docket.brief.result import Brief
    from docket.policy import Policy

FORMAT_HELP = "Fence format: " + "; ".join(f"{n} ({get_format(n).summary})" for n in text_formats()) + ". Default xml."

parse_date = opt.parse_date


def load_policy_with(path: Path | None, fmt: str | None = None) -> Policy:
    from docket.policy import load_policy

    policy = load_policy(path)
    if fmt is not None:
        policy = policy.updated(render={"format": opt.check_choice(fmt, "--format", tuple(text_formats()))})
    return policy


def emit_json(payload: dict) -> None:  # type: ignore[type-arg]
    sys.stdout.write(json_text(payload) + "\n")


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
    from docket.cli.show import print_brief
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
    cands = load_candidates(candidates, mem) if candidates else None
    session = Session(mem, policy=policy)
    brief = session.assemble(question, cands, store=mem, history=turns, principal=who, budget=budget, floor=floor,
                             as_of=parse_date(as_of), attachments=list(files or []) or None, whole_corpus=whole_corpus,
                             router=opt.router_for(route_llm, model),
                             generator=opt.summary_generator(policy, llm, model))
    opt.write_html(html_path, brief, brief.ranked)
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


@app.command("demo")
def demo_cmd(
    budget: Annotated[int, typer.Option("--budget", help="Evidence budget for the refund question.", callback=opt.positive)] = 250,
    as_json: Annotated[bool, typer.Option("--json", help="Print both briefs as JSON.")] = False,
) -> None:
    """The spec's Nimbus example: eight chunks, the refund question and the student-discount question."""
    from docket.assemble import assemble, rank_by_cosine
    from docket.cli.show import print_brief, print_ranking
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
    corpus_tokens: Annotated[int | None, typer.Option(
        "--corpus-tokens", help="Compare sending a corpus of this many tokens in every prompt (uncached and "
        "cached) with retrieval at the input target.", callback=opt.positive)] = None,
    cache_read: Annotated[float | None, typer.Option(
        "--cache-read", help="With --corpus-tokens: cached-read multiplier of the input price (default 0.1).",
        callback=opt.finite(0.0))] = None,
    cache_write: Annotated[float | None, typer.Option(
        "--cache-write", help="With --corpus-tokens: cache-write multiplier of the input price (default 1.25).",
        callback=opt.finite(0.0))] = None,
    cache_ttl: Annotated[float | None, typer.Option(
        "--cache-ttl", help="With --corpus-tokens: minutes a cached prefix lives without a hit (default 5).",
        callback=opt.finite(0.0, lo_open=True))] = None,
    model_preset: opt.ModelPreset = None,
) -> None:
    """The prompt's contract in tokens: the evidence budget derived backward, and what it costs."""
    from docket.assemble import assemble
    from docket.brief import layout
    from docket.context import Context
    from docket.io import load_chunks
    from docket.store.base import MemoryStore
    from docket.tokens import default_counter

    opt.requires(ask, store, "--question", "--store")
    for flag, given in (("--cache-read", cache_read), ("--cache-write", cache_write), ("--cache-ttl", cache_ttl)):
        opt.requires(given, corpus_tokens, flag, "--corpus-tokens")
    for name, v in (("--input-target", input_target), ("--chunk-tokens", chunk_tokens)):
        if v <= 0:
            raise InputError(f"must be positive, got {v}", field=name)
    for name, v in (("--history", history), ("--question-tokens", question), ("--answer-reserve", answer_reserve),
                    ("--tags", tags), ("--queries-per-day", per_day)):
        if v < 0:
            raise InputError(f"must not be negative, got {v}", field=name)
    pol = load_policy_with(policy_path)
    turns = None
    console = terminal_console()
    if history_file is not None:
        from docket.history import load_history, prepare
        from docket.model import Trace

        turns = load_history(history_file)
        kept = prepare(turns, pol.history, default_counter(), Trace())
        history = kept.tokens
        console.print(f"history: {len(kept.messages)} of {kept.given} turn(s) kept, {kept.tokens} tokens "
                      f"(history budget {pol.history.max_tokens}; newest kept word for word)", soft_wrap=True)
    if model_preset is not None:
        from docket.presets import get_preset

        pre = get_preset(model_preset, field="--model-preset")
        input_target, answer_reserve = pre.input_target, pre.answer_reserve
        console.print(f"preset {model_preset} ({pre.label}): input target {pre.input_target:,}, answer reserve "
                        f"{pre.answer_reserve:,}, window {pre.context_window:,}, counter {pre.tokenizer}"
                        + ("" if pre.tokenizer_exact else " (a stand-in)") + f" · source: {pre.source} ({pre.checked})",
                        soft_wrap=True, markup=False)
    if system is None:
        ctx = Context(question="", store=MemoryStore([]), policy=pol, counter=default_counter())
        system = ctx.tokens(layout.system_text(ctx, pol.render.format)) + ctx.tokens(layout.format_text(ctx))
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
    if corpus_tokens is not None:
        _print_corpus_comparison(console, corpus_tokens, input_target, price, 0.1 if cache_read is None else cache_read,
                                 1.25 if cache_write is None else cache_write, per_day,
                                 5.0 if cache_ttl is None else cache_ttl)
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


def _print_corpus_comparison(console: Console, corpus: int, rag: int, price: float, read: float, write: float,
                             per_day: int, ttl: float) -> None:
    """The spec's arithmetic: the whole corpus in every prompt against retrieval."""
    from docket.modes.caching import whole_vs_retrieval

    r = whole_vs_retrieval(corpus_tokens=corpus, rag_tokens=rag, price=price, read=read, write=write, per_day=per_day,
                           ttl_minutes=ttl)
    t = Table(title=f"Whole corpus ({corpus:,} tokens) in every prompt vs retrieval ({rag:,}-token prompt), "
                    f"input at USD {price:g}/M")
    for col in ("", "per 1,000 queries", f"per day at {per_day:,}"):
        t.add_column(col, justify="right" if col else "left")
    names = {"whole_uncached": "whole corpus, uncached", "whole_cached": f"whole corpus, cached (reads x{read:g})",
             "whole_cached_with_writes": f"whole corpus, cached + writes (x{write:g})",
             "retrieval": f"retrieval, {rag:,}-token prompt"}
    for key, name in names.items():
        t.add_row(name, f"USD {r['per_1000'][key]:,.2f}", f"USD {r['per_day'][key]:,.2f}")
    console.print(t)
    ratio = r["cached_over_retrieval"]
    if ratio is not None:
        even = r["break_even_corpus_tokens"]
        console.print(f"with a warm cache the whole corpus costs {ratio:,.2f} times as much per query as retrieval"
                      + (f"; they cost the same at a corpus of {even:,.0f} tokens" if even is not None else
                         " (a free cached read: no corpus size makes them cost the same)"), soft_wrap=True)
    be = r["break_even_queries_per_day"]
    if be is None:
        console.print("caching never pays at these multipliers (a cached read costs as much as an uncached one)")
    else:
        console.print(f"break-even traffic: caching the corpus costs less than not caching it from {be:,.0f} queries a "
                      f"day (arrivals spread at random over the day, a {ttl:g}-minute cache); at {per_day:,} a day "
                      f"{r['miss_rate']:.2%} of queries rewrite the cache", soft_wrap=True)


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
