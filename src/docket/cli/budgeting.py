"""`docket budget`, behind its options: the prompt's contract in tokens, derived backward from the
input target, what a token of evidence costs, and (with --store) which passages fit for a real
question, packed through a `Session`. The command in docket.cli.core only declares the options."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from docket.cli import options as opt
from docket.cli.terminal import console as terminal_console
from docket.errors import InputError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from docket.history import ChatMessage
    from docket.policy import Policy
else:  # rich loads when a command prints (docket.cli.richlazy)
    from docket.cli.richlazy import Table

# --- the options only `docket budget` takes -----------------------------------------------------
InputTarget = Annotated[int, typer.Option("--input-target", help="Input tokens you choose per query.",
                                          callback=opt.positive)]
SystemTokens = Annotated[int | None, typer.Option("--system", help="System prompt tokens (default: docket's own brief).",
                                                  callback=opt.non_negative)]
HistoryTokens = Annotated[int, typer.Option("--history", help="Chat history tokens.", callback=opt.non_negative)]
QuestionTokens = Annotated[int, typer.Option("--question-tokens", help="Question tokens (capped).",
                                             callback=opt.non_negative)]
AnswerReserve = Annotated[int, typer.Option("--answer-reserve", help="Tokens reserved for the answer.",
                                            callback=opt.non_negative)]
Tags = Annotated[int, typer.Option("--tags", help="Tags + header tokens per passage.", callback=opt.non_negative)]
ChunkTokens = Annotated[int, typer.Option("--chunk-tokens", help="Typical chunk tokens after cleaning.",
                                          callback=opt.positive)]
Price = Annotated[float, typer.Option("--price", help="USD per million input tokens.", callback=opt.finite(0.0))]
PerDay = Annotated[int, typer.Option("--queries-per-day", help="Query volume.", callback=opt.non_negative)]
StoreFile = Annotated[Path | None, typer.Option("--store", help="Show which passages fit for a real question.",
                                                callback=opt.input_file)]
Ask = Annotated[str | None, typer.Option("--question", "-q", help="The question to pack (with --store).",
                                         callback=opt.question)]
HistoryFile = Annotated[Path | None, typer.Option("--history-file", help="Count a real chat history (JSON/JSONL "
                                                  "turns), capped by the policy's history budget, instead of --history.",
                                                  callback=opt.input_file)]
CorpusTokens = Annotated[int | None, typer.Option(
    "--corpus-tokens", help="Compare sending a corpus of this many tokens in every prompt (uncached and "
    "cached) with retrieval at the input target.", callback=opt.positive)]
CacheRead = Annotated[float | None, typer.Option(
    "--cache-read", help="With --corpus-tokens: cached-read multiplier of the input price (default 0.1).",
    callback=opt.finite(0.0))]
CacheWrite = Annotated[float | None, typer.Option(
    "--cache-write", help="With --corpus-tokens: cache-write multiplier of the input price (default 1.25).",
    callback=opt.finite(0.0))]
CacheTtl = Annotated[float | None, typer.Option(
    "--cache-ttl", help="With --corpus-tokens: minutes a cached prefix lives without a hit (default 5).",
    callback=opt.finite(0.0, lo_open=True))]


@dataclass(frozen=True)
class BudgetArgs:
    """Every option of `docket budget`, as parsed (names as the command's parameters)."""

    input_target: int = 6000
    system: int | None = None
    history: int = 900
    question: int = 120
    answer_reserve: int = 0
    tags: int = 35
    chunk_tokens: int = 350
    price: float = 3.0
    per_day: int = 50_000
    store: Path | None = None
    ask: str | None = None
    history_file: Path | None = None
    policy_path: Path | None = None
    corpus_tokens: int | None = None
    cache_read: float | None = None
    cache_write: float | None = None
    cache_ttl: float | None = None
    model_preset: str | None = None


def run_budget(a: BudgetArgs) -> None:
    """The contract table, the passages that fit, the cost of evidence, the corpus comparison."""
    _check(a)
    pol = opt.load_policy_with(a.policy_path)
    console = terminal_console()
    a, turns = _with_history(a, pol, console)
    a = _with_preset(a, console)
    system = a.system if a.system is not None else _system_tokens(pol)
    evidence = a.input_target - a.answer_reserve - system - a.history - a.question
    t = Table(title="The prompt's contract", show_header=False)
    t.add_column("item")
    t.add_column("tokens", justify="right")
    for k, v in (("input target", a.input_target), ("- answer reserve", a.answer_reserve),
                 ("- system rules + format", system), ("- history", a.history), ("- question", a.question),
                 ("= evidence budget", evidence)):
        t.add_row(k, f"{v:,}")
    console.print(t)
    if evidence <= 0:
        raise InputError(f"leaves {evidence} tokens for evidence; raise it or cut history", field="--input-target")
    _print_costs(console, a, evidence)
    if a.corpus_tokens is not None:
        _print_corpus_comparison(console, a.corpus_tokens, a.input_target, a.price,
                                0.1 if a.cache_read is None else a.cache_read,
                                1.25 if a.cache_write is None else a.cache_write, a.per_day,
                                5.0 if a.cache_ttl is None else a.cache_ttl)
    if a.store is not None:
        _print_fit(console, a, pol, evidence, turns)


def _check(a: BudgetArgs) -> None:
    opt.requires(a.ask, a.store, "--question", "--store")
    for flag, given in (("--cache-read", a.cache_read), ("--cache-write", a.cache_write),
                        ("--cache-ttl", a.cache_ttl)):
        opt.requires(given, a.corpus_tokens, flag, "--corpus-tokens")
    for name, v in (("--input-target", a.input_target), ("--chunk-tokens", a.chunk_tokens)):
        if v <= 0:
            raise InputError(f"must be positive, got {v}", field=name)
    for name, v in (("--history", a.history), ("--question-tokens", a.question), ("--answer-reserve", a.answer_reserve),
                    ("--tags", a.tags), ("--queries-per-day", a.per_day)):
        if v < 0:
            raise InputError(f"must not be negative, got {v}", field=name)


def _with_history(a: BudgetArgs, pol: Policy, console: Console) -> tuple[BudgetArgs, list[ChatMessage] | None]:
    """--history-file: the real turns, capped by the policy's history budget, instead of --history."""
    if a.history_file is None:
        return a, None
    from docket.history import load_history, prepare
    from docket.model import Trace
    from docket.tokens import default_counter

    turns = load_history(a.history_file)
    kept = prepare(turns, pol.history, default_counter(), Trace())
    console.print(f"history: {len(kept.messages)} of {kept.given} turn(s) kept, {kept.tokens} tokens "
                  f"(history budget {pol.history.max_tokens}; newest kept word for word)", soft_wrap=True)
    return replace(a, history=kept.tokens), turns


def _with_preset(a: BudgetArgs, console: Console) -> BudgetArgs:
    """--model-preset: its input target and answer reserve."""
    if a.model_preset is None:
        return a
    from docket.presets import get_preset

    pre = get_preset(a.model_preset, field="--model-preset")
    console.print(f"preset {a.model_preset} ({pre.label}): input target {pre.input_target:,}, answer reserve "
                  f"{pre.answer_reserve:,}, window {pre.context_window:,}, counter {pre.tokenizer}"
                  + ("" if pre.tokenizer_exact else " (a stand-in)") + f" · source: {pre.source} ({pre.checked})",
                  soft_wrap=True, markup=False)
    return replace(a, input_target=pre.input_target, answer_reserve=pre.answer_reserve)


def _system_tokens(pol: Policy) -> int:
    """docket's own system rules and format instructions, in the policy's format."""
    from docket.brief import layout
    from docket.context import Context
    from docket.store.base import MemoryStore
    from docket.tokens import default_counter

    ctx = Context(question="", store=MemoryStore([]), policy=pol, counter=default_counter())
    return ctx.tokens(layout.system_text(ctx, pol.render.format)) + ctx.tokens(layout.format_text(ctx))


def _print_costs(console: Console, a: BudgetArgs, evidence: int) -> None:
    naive = evidence // a.chunk_tokens
    real = evidence // (a.chunk_tokens + a.tags)
    over = naive * (a.chunk_tokens + a.tags) - evidence
    console.print(f"passages if you forget the tags: {naive}  (would overflow by {over:,} tokens)" if over > 0
                  else f"passages if you forget the tags: {naive}", soft_wrap=True)
    console.print(f"passages that really fit ({a.chunk_tokens} + {a.tags} tags): {real}", soft_wrap=True)
    extra = 1_000 * a.per_day / 1e6 * a.price
    console.print(f"+1,000 evidence tokens at USD {a.price}/M and {a.per_day:,} queries/day: USD {extra:,.0f}/day, "
                  f"USD {extra * 30:,.0f}/month", soft_wrap=True)


def _print_fit(console: Console, a: BudgetArgs, pol: Policy, evidence: int, turns: list[ChatMessage] | None) -> None:
    """--store and --question: the brief packed at the evidence budget, passage by passage."""
    from docket.api import Session
    from docket.brief.render import render_passage
    from docket.io import load_chunks
    from docket.store.base import MemoryStore
    from docket.tokens import default_counter

    if not a.ask or a.store is None:
        raise InputError("is needed with --store", field="--question")
    with Session(MemoryStore(load_chunks(a.store)), policy=pol) as session:
        brief = session.assemble(a.ask, budget=evidence, history=turns)
    fit = Table(title=f"Passages that fit {evidence:,} evidence tokens for: {a.ask}")
    for col in ("label", "chunks", "section", "tokens"):
        fit.add_column(col)
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


__all__ = ["BudgetArgs", "run_budget"]
