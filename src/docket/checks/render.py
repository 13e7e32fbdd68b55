"""Readable (rich) output of a check report, shared by `docket check` and `--llm` runs."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from docket.check import CheckReport


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
    if report.refusal:
        console.print("[cyan]refusal[/]: the answer contains the brief's refusal sentence"
                      + (" (and nothing else)" if report.refusal_only else ""))
    if report.unknown_labels:
        console.print(f"[red]unknown labels[/]: {', '.join(report.unknown_labels)} (not in the brief)")
    for s in report.uncited_sentences:
        console.print(f"[red]uncited[/]: {escape(s)}")
    for u in report.unsupported:
        by = {"lexical": "lexical check", "judge": report.judge or "judge", "overlap": "overlap check"}.get(u.get("by", ""), "")
        console.print(f"[red]unsupported[/] [{escape(u['label'])}] {escape(u['sentence'])}\n    {escape(u['reason'])}"
                      + (f" ({escape(by)})" if by else ""))
    if report.flagged_links:
        t = Table(title="links to domains not on the allow-list", show_lines=False)
        t.add_column("kind")
        t.add_column("domain")
        t.add_column("url", overflow="fold")
        for lk in report.flagged_links:
            t.add_row(lk["kind"], lk["domain"] or "(none)", escape(lk["url"]))
        console.print(t)
    for u in report.untrusted_citations:
        console.print(f"[yellow]note[/]: cites {u['label']} ({u['status'] or 'untrusted'}): {escape(u['sentence'])}")
    if report.judge_undecided:
        console.print(f"[yellow]note[/]: the judge gave no verdict on {report.judge_undecided} sentence(s)")
    if report.stripped_answer is not None:
        console.print("[bold]answer with disallowed links removed:[/]")
        console.print(escape(report.stripped_answer))
    claims = sum(1 for s in report.sentences if s.kind == "claim")
    if report.clean:
        console.print(f"[green]clean[/]: {claims} factual sentence(s), labels {', '.join(report.cited_labels) or 'none'}")
    else:
        console.print(f"[red]{report.findings} finding(s)[/] in {claims} factual sentence(s)")
