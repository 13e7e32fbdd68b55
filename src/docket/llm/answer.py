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

from docket.check import CheckReport, SupportJudge, check_answer
from docket.checks.sentences import labels_in
from docket.errors import DocketError
from docket.llm.base import Answer, AnswersBriefs, Citation, Completes, EnforcesSchema, Generator


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


def generate_answer(generator: Generator, brief: Any, *, max_tokens: int = 512, temperature: float = 0.0,
                    structured: bool = False) -> Answer:
    """One answer from any generator: native citations when it takes the whole brief; with
    `structured`, a JSON answer (docket.llm.structured) instead."""
    if structured:
        return generate_structured(generator, brief, max_tokens=max_tokens, temperature=temperature)
    if isinstance(generator, AnswersBriefs):
        ans = generator.answer_brief(brief, max_tokens=max_tokens, temperature=temperature)
        if isinstance(ans, Answer):
            return ans
    if isinstance(generator, Completes):
        ans = generator.complete(brief.messages, max_tokens=max_tokens, temperature=temperature)
        if isinstance(ans, Answer):
            ans.citations = ans.citations or _citations_from_labels(ans.text)
            return ans
    t0 = time.perf_counter()
    text = generator.generate(brief.messages, max_tokens=max_tokens, temperature=temperature)
    return Answer(text=text.strip(), model=getattr(generator, "name", ""), citations=_citations_from_labels(text),
                  seconds=time.perf_counter() - t0)


def generate_structured(generator: Any, brief: Any, *, max_tokens: int = 512, temperature: float = 0.0) -> Answer:
    """A structured answer: the schema goes to the endpoint when the generator can enforce one
    (`complete_structured`), else it is only asked for in the prompt (and says so in `note`).
    `Answer.text` is the reply as prose with [S#] markers; `Answer.structured` the parsed JSON or
    the one-line parse error (never an exception: the check reports it)."""
    from docket.llm.structured import answer_schema, parse_reply, reply_labels, reply_text, structured_messages

    refusal = str(getattr(brief, "refusal", "") or "I do not know from the provided sources.")
    messages = structured_messages(brief.messages, refusal)
    schema = answer_schema(list(getattr(brief, "sources", {}) or {}))
    if isinstance(generator, EnforcesSchema):
        ans = generator.complete_structured(messages, schema, max_tokens=max_tokens, temperature=temperature)
    else:
        t0 = time.perf_counter()
        text = generator.generate(messages, max_tokens=max_tokens, temperature=temperature)
        ans = Answer(text=text.strip(), model=getattr(generator, "name", ""), seconds=time.perf_counter() - t0,
                     note="JSON asked for in the prompt only: this generator cannot enforce a schema")
    ans.mode = "structured"
    parsed = parse_reply(ans.text, finish_reason=ans.finish_reason)
    ans.structured = parsed.to_json()
    if parsed.reply is not None:
        ans.text = reply_text(parsed.reply, refusal)
        ans.citations = [Citation(label=lab) for lab in reply_labels(parsed.reply)]
    else:
        ans.citations = [] if parsed.looks_like_json else _citations_from_labels(ans.text)
    return ans


def not_called(brief: Any, structured: bool = False) -> Answer:
    """The answer when nothing reached the floor and the model is not called: the brief's refusal
    sentence, and with `structured` the typed refusal the model would have been asked for."""
    ans = Answer(text=brief.refusal, model="(not called: nothing above the floor)")
    if structured:
        ans.mode = "structured"
        ans.structured = {"sentences": [], "refusal": {"reason": "no passage reached the score floor; the model was not called"}}
    return ans


def checked_reply(ans: Answer, structured: bool) -> Any:
    """What `check_answer` reads for an answer: its text, or with `structured` the parsed reply
    (a reply that did not parse is passed on as such: the check reports it as malformed)."""
    if not structured:
        return ans.text
    from docket.llm.structured import ParsedReply

    got = ans.structured or {}
    return got if "sentences" in got else ParsedReply(raw=str(got.get("raw", "")), error=str(got.get("error")))


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
    structured: bool = False,
) -> AnswerReport:
    """Answer the brief with the model at `url` (or `generator`) and check the answer.

    With `structured` the model answers in JSON (sentences with their citations, or a typed
    refusal) and that is what is checked; a reply that is not valid JSON of that shape is a
    finding (`check.malformed`), not an error. Never raises for a model failure: the report
    carries the brief and a one-line `error`.
    `allowed_domains` and `strip` are `docket check`'s link allow-list and stripping; a bad
    allow-list entry raises InputError before the model is called.
    """
    from docket.checks.links import normalize_domains

    allowed_domains = normalize_domains(allowed_domains)
    report = AnswerReport(brief=brief)
    if not getattr(brief, "found", True):
        report.skipped = True
        report.generator = None
        report.answer = not_called(brief, structured)
        report.check = check_answer(checked_reply(report.answer, structured), brief, allowed_domains=allowed_domains,
                                    strip=strip)
        return report
    try:
        if generator is None:
            from docket.llm import generator_from_url

            generator = generator_from_url(url or "", model=model, timeout=timeout)
        report.generator = getattr(generator, "name", type(generator).__name__)
        report.answer = generate_answer(generator, brief, max_tokens=max_tokens, temperature=temperature,
                                        structured=structured)
        report.generator = getattr(generator, "name", report.generator)
    except DocketError as e:
        report.error = str(e)
        report.error_kind = getattr(e, "kind", type(e).__name__)
        return report
    try:
        report.check = check_answer(checked_reply(report.answer, structured), brief, judge=judge,
                                    allowed_domains=allowed_domains, strip=strip)
    except DocketError as e:  # a judge's model call can fail too; the answer stays
        report.error = f"check: {e}"
        report.error_kind = getattr(e, "kind", type(e).__name__)
    return report
