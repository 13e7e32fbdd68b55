"""Printing answers and check reports for people (rich), and the exit status of a run with
`--llm`: the command line's side of docket.llm.answer and docket.check, which print nothing."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from docket.check import CheckReport
from docket.cli.terminal import console as terminal_console
from docket.cli.terminal import json_text, safe, show
from docket.llm.answer import AnswerReport, run_and_check


def source_line(label: str, src: dict[str, Any]) -> str:
    """'S1  refund-policy v3 · Nimbus refund policy / Annual plans · 2026-03-01 · current'."""
    head = f"{src.get('doc', '?')} v{src.get('version', '?')}"
    title = " / ".join(str(x) for x in (src.get("title"), src.get("section")) if x)
    parts = [head] + [p for p in (title, src.get("date"), src.get("status")) if p]
    chunks = src.get("chunks")
    if chunks:
        parts.append("chunks " + ", ".join(map(str, chunks)))
    return " · ".join(str(p) for p in parts)


def print_check_report(report: CheckReport, console: Console) -> None:
    """Findings first (what to fix), then a one-line verdict."""
    if report.malformed:
        console.print(f"[red]malformed[/]: {show(report.malformed)}")
    if report.structured and report.structured.get("reason") is not None:
        kind = "refusal" if report.structured.get("kind") == "refusal" else "partial answer, refusal"
        console.print(f"[cyan]{kind}[/] (structured): {show(str(report.structured.get('reason', '')))}")
    elif report.refusal:
        console.print("[cyan]refusal[/]: the answer contains the brief's refusal sentence"
                      + (" (and nothing else)" if report.refusal_only else ""))
    if report.unknown_labels:
        console.print(f"[red]unknown labels[/]: {show(', '.join(report.unknown_labels))} (not in the brief)")
    for s in report.uncited_sentences:
        console.print(f"[red]uncited[/]: {show(s)}")
    for u in report.unsupported:
        by = {"lexical": "lexical check", "judge": report.judge or "judge", "overlap": "overlap check"}.get(u.get("by", ""), "")
        console.print(f"[red]unsupported[/] [{show(u['label'])}] {show(u['sentence'])}\n    {show(u['reason'])}"
                      + (f" ({show(by)})" if by else ""))
    if report.flagged_links:
        t = Table(title="links to domains not on the allow-list", show_lines=False)
        t.add_column("kind")
        t.add_column("domain")
        t.add_column("url", overflow="fold")
        for lk in report.flagged_links:
            t.add_row(show(lk["kind"]), show(lk["domain"] or "(none)"), show(lk["url"]))
        console.print(t)
    for u in report.untrusted_citations:
        console.print(f"[yellow]note[/]: cites {show(u['label'])} ({show(u['status'] or 'untrusted')}): {show(u['sentence'])}")
    for u in report.derived_citations:
        console.print(f"[yellow]note[/]: cites {show(u['label'])} (docket's {show(u['derived'])}, not a source): {show(u['sentence'])}")
    if report.judge_undecided:
        console.print(f"[yellow]note[/]: the judge gave no verdict on {report.judge_undecided} sentence(s)")
    if report.stripped_answer is not None:
        console.print("[bold]answer with disallowed links removed:[/]")
        console.print(show(report.stripped_answer))
    claims = sum(1 for s in report.sentences if s.kind == "claim")
    if report.clean:
        console.print(f"[green]clean[/]: {claims} factual sentence(s), labels {show(', '.join(report.cited_labels) or 'none')}")
    else:
        console.print(f"[red]{report.findings} finding(s)[/] in {claims} factual sentence(s)")


def print_answer_report(report: AnswerReport, console: Console) -> None:
    """The answer, its citations resolved to sources, and the check's findings."""
    if report.error and report.answer is None:
        console.print(f"[red]model call failed[/]: {show(report.error)}")
        console.print("[dim]the brief above is complete; send it to a model yourself or fix the endpoint[/]")
        return
    ans = report.answer
    if ans is None:
        return
    title = "answer" + (f" · {ans.model}" if ans.model else "")
    if ans.seconds:
        speed = ""
        completion = ans.usage.get("completion_tokens")
        if completion:
            speed = f", {completion} tokens, {completion / ans.seconds:.1f} tok/s"
        title += f" · {ans.seconds:.1f} s{speed}"
    if ans.mode != "text":
        title += f" · {ans.mode}"
    console.print(Panel(show(ans.text), title=title, expand=False))
    if ans.note:
        console.print(f"[dim]{show(ans.note)}[/]")
    sources = getattr(report.brief, "sources", {}) or {}
    if ans.citations:
        t = Table(title="citations", show_lines=False)
        t.add_column("label")
        t.add_column("source", overflow="fold")
        t.add_column("cited text", overflow="fold")
        seen: set[tuple[str, str | None]] = set()
        for c in ans.citations:
            key = (c.label, c.cited_text)
            if key in seen:
                continue
            seen.add(key)
            src = sources.get(c.label)
            t.add_row(show(c.label), show(source_line(c.label, src)) if src else "[red]not in the brief[/]",
                      show(c.cited_text or ""))
        console.print(t)
    if report.check is not None:
        print_check_report(report.check, console)
    if report.error:
        console.print(f"[red]{show(report.error)}[/]")


#: exit status of a command run with --llm: 0 answer clean, 1 check findings, 3 model call failed
#: (the brief was still printed); bad input stays 2 as everywhere in docket.
EXIT_CLEAN, EXIT_FINDINGS, EXIT_MODEL_FAILED = 0, 1, 3


def answer_cli(
    brief: Any,
    llm: str,
    model: str | None,
    *,
    as_json: bool,
    print_brief: Any = None,
    console: Console | None = None,
    allowed_domains: tuple[str, ...] | list[str] = (),
    strip: bool = False,
    report: AnswerReport | None = None,
    structured: bool = False,
) -> int:
    """What `--llm URL [--model M]` adds to `docket assemble` / `docket ask`; returns the exit status.

    With `as_json` the brief's JSON gets "answer" and "check" keys (and "llm_error" on failure);
    otherwise `print_brief(console)` prints the brief as the command normally does, then the answer,
    its citations resolved to sources, and the findings. A model failure prints one line on stderr
    after the complete brief.
    """
    import sys

    if report is None:
        report = run_and_check(brief, llm, model, allowed_domains=allowed_domains, strip=strip, structured=structured)
    if as_json:
        payload = brief.to_json()
        payload.update(report.to_json())
        sys.stdout.write(json_text(payload) + "\n")
    else:
        console = console or terminal_console()
        if print_brief is not None:
            print_brief(console)
        print_answer_report(report, console)
    if report.error:
        print(f"docket: error: {safe(report.error)}", file=sys.stderr)
        return EXIT_MODEL_FAILED
    return EXIT_CLEAN if report.check is None or report.check.clean else EXIT_FINDINGS
