"""Generate an answer from a brief and check it: what `--llm URL` does on `assemble` and `ask`.

The brief is the expensive, deterministic part and the model call the fragile one, so a failed
call never loses the brief: `run_and_check` returns an `AnswerReport` that keeps the brief and
carries the error as one line instead of raising. When the brief found nothing above the floor,
the model is not called at all and the answer is the brief's refusal sentence.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from docket.check import CheckReport, SupportJudge, check_answer
from docket.checks.sentences import labels_in
from docket.errors import DocketError
from docket.llm.base import Answer, Citation, Generator


@dataclass
class AnswerReport:
    """The answer, its check, and the brief it came from. `error` is set when the call failed."""

    brief: Any
    answer: Answer | None = None
    check: CheckReport | None = None
    error: str | None = None
    error_kind: str | None = None
    generator: str | None = None
    #: True when the brief found nothing and the model was not called
    skipped: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_json(self) -> dict[str, Any]:
        """The keys `--llm --json` adds to the brief's JSON: "answer", "check" (and "llm_error")."""
        ans: dict[str, Any] | None = None
        if self.answer is not None:
            ans = self.answer.to_json()
            ans["generator"] = self.generator
            ans["skipped"] = self.skipped
            sources = getattr(self.brief, "sources", {}) or {}
            for c in ans["citations"]:
                src = sources.get(c["label"])
                if src:
                    c["source"] = {k: src.get(k) for k in ("doc", "version", "chunks", "title", "section", "date", "status")}
            completion = self.answer.usage.get("completion_tokens")
            if completion and self.answer.seconds > 0:
                ans["tokens_per_second"] = round(completion / self.answer.seconds, 1)
        out: dict[str, Any] = {"answer": ans, "check": self.check.to_json() if self.check else None}
        if self.error:
            out["llm_error"] = {"message": self.error, "kind": self.error_kind}
        return out


def _citations_from_labels(text: str) -> list[Citation]:
    return [Citation(label=lab) for lab in labels_in(text)]


def generate_answer(generator: Generator, brief: Any, *, max_tokens: int = 512, temperature: float = 0.0) -> Answer:
    """One answer from any generator: native citations when it takes the whole brief."""
    answer_brief = getattr(generator, "answer_brief", None)
    if callable(answer_brief):
        ans = answer_brief(brief, max_tokens=max_tokens, temperature=temperature)
        if isinstance(ans, Answer):
            return ans
    complete = getattr(generator, "complete", None)
    if callable(complete):
        ans = complete(brief.messages, max_tokens=max_tokens, temperature=temperature)
        if isinstance(ans, Answer):
            ans.citations = ans.citations or _citations_from_labels(ans.text)
            return ans
    t0 = time.perf_counter()
    text = generator.generate(brief.messages, max_tokens=max_tokens, temperature=temperature)
    return Answer(text=text.strip(), model=getattr(generator, "name", ""), citations=_citations_from_labels(text),
                  seconds=time.perf_counter() - t0)


def run_and_check(
    brief: Any,
    url: str | None = None,
    model: str | None = None,
    *,
    generator: Generator | None = None,
    judge: SupportJudge | None = None,
    allowed_domains: tuple[str, ...] | list[str] = (),
    strip: bool = False,
    max_tokens: int = 512,
    temperature: float = 0.0,
    timeout: float = 120.0,
) -> AnswerReport:
    """Answer the brief with the model at `url` (or `generator`) and check the answer.

    Never raises for a model failure: the report carries the brief and a one-line `error`.
    `allowed_domains` and `strip` are `docket check`'s link allow-list and stripping; a bad
    allow-list entry raises InputError before the model is called.
    """
    from docket.checks.links import normalize_domains

    allowed_domains = normalize_domains(allowed_domains)
    report = AnswerReport(brief=brief)
    if not getattr(brief, "found", True):
        report.skipped = True
        report.generator = None
        report.answer = Answer(text=brief.refusal, model="(not called: nothing above the floor)")
        report.check = check_answer(report.answer.text, brief, allowed_domains=allowed_domains, strip=strip)
        return report
    try:
        if generator is None:
            from docket.llm import generator_from_url

            generator = generator_from_url(url or "", model=model, timeout=timeout)
        report.generator = getattr(generator, "name", type(generator).__name__)
        report.answer = generate_answer(generator, brief, max_tokens=max_tokens, temperature=temperature)
        report.generator = getattr(generator, "name", report.generator)
    except DocketError as e:
        report.error = str(e)
        report.error_kind = getattr(e, "kind", type(e).__name__)
        return report
    try:
        report.check = check_answer(report.answer.text, brief, judge=judge, allowed_domains=allowed_domains,
                                    strip=strip)
    except DocketError as e:  # a judge's model call can fail too; the answer stays
        report.error = f"check: {e}"
        report.error_kind = getattr(e, "kind", type(e).__name__)
    return report


def print_answer_report(report: AnswerReport, console: Console) -> None:
    """The answer, its citations resolved to sources, and the check's findings."""
    from docket.checks.render import print_check_report, source_line

    if report.error and report.answer is None:
        console.print(f"[red]model call failed[/]: {escape(report.error)}")
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
    console.print(Panel(escape(ans.text), title=title, expand=False))
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
            t.add_row(c.label, escape(source_line(c.label, src)) if src else "[red]not in the brief[/]",
                      escape(c.cited_text or ""))
        console.print(t)
    if report.check is not None:
        print_check_report(report.check, console)
    if report.error:
        console.print(f"[red]{escape(report.error)}[/]")


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
) -> int:
    """What `--llm URL [--model M]` adds to `docket assemble` / `docket ask`; returns the exit status.

    With `as_json` the brief's JSON gets "answer" and "check" keys (and "llm_error" on failure);
    otherwise `print_brief(console)` prints the brief as the command normally does, then the answer,
    its citations resolved to sources, and the findings. A model failure prints one line on stderr
    after the complete brief.
    """
    import json
    import sys

    report = run_and_check(brief, llm, model, allowed_domains=allowed_domains, strip=strip)
    if as_json:
        payload = brief.to_json()
        payload.update(report.to_json())
        sys.stdout.write(json.dumps(payload, ensure_ascii=False, indent=2) + "\n")
    else:
        console = console or Console()
        if print_brief is not None:
            print_brief(console)
        print_answer_report(report, console)
    if report.error:
        print(f"docket: error: {report.error}", file=sys.stderr)
        return EXIT_MODEL_FAILED
    return EXIT_CLEAN if report.check is None or report.check.clean else EXIT_FINDINGS
