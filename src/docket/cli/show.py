"""Printing a brief for people: ranking, trace, prompt, sources. Shared by every command.

Every value from the data goes through `terminal.show` (control characters written visibly,
Rich markup escaped); the consoles are `terminal.SafeConsole`s as well."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from docket.brief.result import Brief
from docket.cli.terminal import show
from docket.model import Candidate


def screened_out(brief: Brief) -> dict[str, str]:
    """Each candidate the assembly dropped for its score, by chunk id, and the rule: read from the
    brief's trace, so the ranking shows the floor this assembly applied (its embedder's, lowered for
    an exact hit, or none for an embedder without a known floor), never one guessed here."""
    out: dict[str, str] = {}
    for e in brief.trace:
        if e["move"] == "floor" and e["action"] == "drop":
            why = "beyond margin" if "margin" in (e.get("numbers") or {}) else "below floor"
        elif e["move"] == "pack" and e["action"] == "stop" and "< floor" in e["reason"]:
            why = "below floor"
        else:
            continue
        for cid in e["chunks"]:
            out.setdefault(cid, why)
    return out


def print_ranking(console: Console, candidates: Sequence[Candidate], dropped: Mapping[str, str]) -> None:
    """The ranking as retrieved; `dropped` (`screened_out`): the candidates the floor or the margin removed."""
    t = Table(title="Ranked candidates", show_lines=False)
    for col in ("rank", "id", "doc", "version", "status", "score"):
        t.add_column(col, justify="right" if col in ("rank", "score", "version") else "left")
    for c in candidates:
        why = dropped.get(c.chunk.id)
        mark = f" [dim]({why})[/dim]" if why else ""
        t.add_row(str(c.rank), show(c.chunk.id), show(c.chunk.doc), f"v{c.chunk.version}", show(c.chunk.status),
                  f"{c.score:.3f}{mark}")
    console.print(t)


def print_trace(console: Console, trace: Sequence[Mapping[str, Any]]) -> None:
    t = Table(title="Decisions (trace)", show_lines=False)
    t.add_column("move")
    t.add_column("action")
    t.add_column("chunks")
    t.add_column("why")
    for e in trace:
        t.add_row(show(e["move"]), show(e["action"]), show(", ".join(e["chunks"])), show(e["reason"]))
    console.print(t)


def explain_on_stderr(brief: Brief) -> None:
    """`--explain` with `--json`: the decisions table goes to stderr, so stdout stays the JSON
    contract alone (which holds the same trace under "trace") and nothing asked for is lost."""
    from docket.cli.terminal import console as terminal_console

    print_trace(terminal_console(stderr=True), brief.trace)


def not_found_reason(trace: Sequence[Mapping[str, Any]]) -> str:
    """Why a brief is `found: false`, in its trace's words: the gate that said so (the floor, the
    answerability reader, an empty pool, a corpus the asker may not read), else the budget."""
    for e in reversed(trace):
        if e["action"] == "not_found":
            return str(e["reason"]).split(": answer 'not found'")[0]
    return "no passage fits the evidence budget (the trace says what was skipped)"


def print_sources(console: Console, brief: Brief) -> None:
    t = Table(title="Label -> source")
    for col in ("label", "source", "chunks", "section", "status", "also in"):
        t.add_column(col)
    for label, s in brief.sources.items():
        also = ", ".join(f"{a['doc']} v{a['version']}" for a in s.get("also_in", []))
        src = f"{s['doc']} v{s['version']}" + (f" ({s['date']})" if s["date"] else "")
        status = s["status"] + ("" if s["trust"] == "trusted" else f", {s['trust']}")
        t.add_row(show(label), show(src), show(", ".join(s["chunks"])), show(s["section"] or ""), show(status),
                  show(also))
    console.print(t)


def print_brief(console: Console, brief: Brief, *, explain: bool = True, prompt: bool = True) -> None:
    if explain:
        print_trace(console, brief.trace)
    for w in brief.warnings:
        console.print(f"[yellow]warning:[/yellow] {show(w)}")
    for c in brief.conflicts:
        labels = " and ".join(c.get("labels", [])) or " and ".join(c["chunks"])
        console.print(f"[magenta]conflict ({show(c['kind'])}):[/magenta] {show(labels)}: {show(c['reason'])}")
    if not brief.found:
        console.print(Panel(f"found: false: {show(not_found_reason(brief.trace))}. Answer {show(repr(brief.refusal))} "
                            "without calling a model.", title="not found", border_style="yellow"))
        return
    print_sources(console, brief)
    if prompt:
        console.print(Panel(show(brief.system), title="system message (stable, cacheable)", border_style="blue"))
        console.print(Panel(show(brief.user), title="user message", border_style="green"))
    tk = brief.tokens
    console.print(
        f"tokens: system {tk['system']} · documents {tk['documents']} of budget {brief.budget} "
        f"(text {tk['passage_text']}, tags {tk['tags']}) · question {tk['question']} · format {tk['format']} · "
        f"total {tk['total']}"
    )
    print_mode(console, brief)


def print_mode(console: Console, brief: Brief) -> None:
    """How the context was chosen, what a prompt cache holds of it, and which counter counted."""
    parts = [f"mode: {brief.mode}"]
    cache = brief.cache
    if cache:
        usd = cache["usd_per_query"]
        parts.append(f"cacheable prefix ({cache['prefix']}): {cache['cacheable_tokens']:,} of {cache['prefix_tokens']:,} "
                     f"tokens · USD/query at {cache['price_per_m']}/M: {usd['uncached']:.6f} uncached, "
                     f"{usd['cached']:.6f} warm cache, {usd['first_call']:.6f} first call")
    tok = brief.tokenizer
    if tok:
        parts.append(f"counter: {tok['counter']}" + (f" ({tok['note']})" if tok.get("note") else
                                                      f" (exact for {tok['model']})" if tok.get("model") else ""))
    console.print(show(" · ".join(parts)), soft_wrap=True)
