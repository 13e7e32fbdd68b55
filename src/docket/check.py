"""Check an answer against the brief it was written from.

Citations start at assembly (every passage has a label) and end here: after generation, docket
checks that

* every cited label exists in the brief (`unknown_labels`);
* every factual sentence cites something (`uncited_sentences`); headings, greetings, questions
  and the brief's literal refusal sentence are not factual sentences, unless they cite a label
  or state an amount, percentage or date that no passage and not the question holds (a claim
  on the refusal's line is a sentence of its own);
* each cited passage contains the sentence's hard facts — numbers, amounts, percentages, dates
  and names (`unsupported`, found by a cheap lexical comparison that needs no model) — and,
  optionally, that a judge (an LLM behind the `SupportJudge` protocol) agrees it supports the
  sentence;
* links in the answer only point to allowed domains (`flagged_links`), since a planted passage
  can make the model add a link that carries data out; they can be stripped.

The structural checks prove a label exists, not that it supports the claim; the lexical check
proves a hard fact is missing, not that the rest is true; a judge covers paraphrase at the cost
of a model call per sentence. The report says which check found what.

    report = check_answer(answer_text, brief)            # Brief, its to_json() dict, JSON text or a path
    report.clean, report.to_json()
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from docket.checks.facts import PassageFacts, canonical_unit, content_words, sentence_facts
from docket.checks.links import Link, find_links, flagged_links, normalize_domains, strip_links
from docket.checks.sentences import Sentence, classify, labels_in, refusal_parts, split_sentences
from docket.errors import InputError
from docket.llm.structured import ParsedReply, Reply, parse_reply
from docket.safeio import decode_json, loads_json, read_text, shown
from docket.text import loose_sentences

DEFAULT_REFUSAL = "I do not know from the provided sources."

__all__ = [
    "BriefSources",
    "CheckReport",
    "LLMJudge",
    "SupportJudge",
    "Verdict",
    "check_answer",
    "check_structured",
    "find_links",
    "labels_in",
    "load_brief",
    "split_sentences",
    "strip_links",
]


# -- the brief --------------------------------------------------------------------------------


@dataclass
class BriefSources:
    """What the checker needs from a brief: label -> source (with its passage text), the refusal."""

    sources: dict[str, dict[str, Any]]
    refusal: str
    found: bool = True
    #: "no_retrieve": a brief without documents (docket.modes): nothing to cite, so no sentence is "uncited"
    mode: str = "retrieve"
    #: the question the brief answers: a heading or question in the answer may repeat its facts uncited
    question: str = ""

    def evidence(self, label: str) -> str:
        """The passage text plus the header metadata the model also saw (title, section, date...)."""
        s = self.sources[label]
        meta = " ".join(str(s[k]) for k in ("title", "section", "date", "status") if s.get(k))
        return f"{meta}\n{s.get('text', '')}" if meta else str(s.get("text", ""))


#: the forms `brief` takes, for the messages that refuse one
BRIEF_FORMS = ("pass one of: the Brief (or its to_json() dict); the JSON text `docket assemble --json` printed; "
               "or the path of a file holding it (a pathlib.Path, or a str naming an existing file)")


def load_brief(brief: Any, *, where: str | None = None) -> BriefSources:
    """Accept a `Brief`, its `to_json()` dict, JSON text, or a path to `docket assemble --json` output.

    A `pathlib.Path` is a path. A `str` is JSON text when it parses as JSON (or looks like it:
    `{`, `[` or `"` first, several lines, longer than 4096 characters), else the path of a file
    when one exists there; any other str is refused, naming `brief` and the three forms, never
    read as a missing file (`check_answer(text, "brief")` once said "brief: file not found").
    Bad input raises `InputError` naming the file and the field at fault.
    """
    if hasattr(brief, "sources") and hasattr(brief, "refusal") and not isinstance(brief, Mapping):
        return BriefSources(dict(brief.sources), str(brief.refusal or DEFAULT_REFUSAL), bool(getattr(brief, "found", True)),
                            str(getattr(brief, "mode", "retrieve")), str(getattr(brief, "question", "") or ""))
    data: Any = brief
    if isinstance(brief, str) and not brief.strip():
        raise InputError(f"is empty; {BRIEF_FORMS}", where=where or "brief")
    if isinstance(brief, str):
        data = _brief_text(brief, where or "brief")
    elif isinstance(brief, Path):
        where = where or str(brief)
        data = read_text(brief)  # names the file: missing, a folder, a loop, not UTF-8
    elif not isinstance(brief, Mapping):
        raise InputError(f"got {type(brief).__name__} {shown(brief)}; {BRIEF_FORMS}", where=where or "brief")
    if isinstance(data, Path):
        where = where or str(data)
        data = read_text(data)
    if isinstance(data, str):
        try:
            data = loads_json(data, where or "brief")
        except InputError as e:
            raise InputError(f"{e.detail}; pass what `docket assemble --json` prints", where=where or "brief",
                             field=e.field) from None
    if not isinstance(data, Mapping):
        raise InputError("must be a JSON object (the output of `docket assemble --json`)", where=where or "brief")
    sources = data.get("sources")
    if sources is None:
        raise InputError("is missing; pass what `docket assemble --json` prints", where=where or "brief", field="sources")
    if not isinstance(sources, Mapping):
        raise InputError("must be an object mapping labels to sources", where=where or "brief", field="sources")
    clean: dict[str, dict[str, Any]] = {}
    for label, src in sources.items():
        if not re.fullmatch(r"S[1-9]\d{0,8}", str(label)):  # "S01" or "S0" could never be cited: [S01] reads as S1
            raise InputError("labels must look like S1, S2, ... (S, then a number from 1 without leading zeros)",
                             where=where or "brief", field=f"sources.{str(label)[:40]}")
        if not isinstance(src, Mapping):
            raise InputError("must be an object", where=where or "brief", field=f"sources.{label}")
        if not isinstance(src.get("text"), str):
            raise InputError("is missing or not a string (the checker compares against the passage text)",
                             where=where or "brief", field=f"sources.{label}.text")
        clean[str(label)] = dict(src)
    refusal = data.get("refusal", DEFAULT_REFUSAL)
    if not isinstance(refusal, str):
        raise InputError("must be a string", where=where or "brief", field="refusal")
    found = data.get("found", True)
    if not isinstance(found, bool):  # "found": "false" is true to bool(): say so instead of guessing
        raise InputError("must be true or false", where=where or "brief", field="found")
    for key in ("mode", "question"):
        if data.get(key) is not None and not isinstance(data.get(key), str):
            raise InputError("must be a string", where=where or "brief", field=key)
    return BriefSources(clean, refusal or DEFAULT_REFUSAL, found, str(data.get("mode") or "retrieve"),
                        str(data.get("question") or ""))


def _brief_text(brief: str, where: str) -> str | Path:
    """A str given as the brief: the JSON text itself, or the Path of the existing file it names
    (see `load_brief`); anything else is refused here."""
    if brief.lstrip()[:1] in ("{", "[", '"') or "\n" in brief or len(brief) > 4096:
        return brief  # JSON text, broken or not: its own parse error says where
    try:
        decode_json(brief)  # null, 42, true: JSON, refused below as not an object
        return brief
    except ValueError:
        pass
    if os.path.lexists(brief):  # a file (or a folder, a loop...: read_text names what it is)
        return Path(brief)
    raise InputError(f"{shown(brief)} is neither JSON text nor the path of an existing file; {BRIEF_FORMS}",
                     where=where)


# -- the judge --------------------------------------------------------------------------------


@dataclass
class Verdict:
    """A judge's decision: True supported, False not supported, None could not decide."""

    supported: bool | None
    reason: str = ""


@runtime_checkable
class SupportJudge(Protocol):
    """Decides whether evidence passages support a claim (an NLI model, an LLM, a person...)."""

    @property
    def name(self) -> str: ...

    def judge(self, claim: str, evidence: Mapping[str, str]) -> Verdict: ...


# Tuned on a handful of Nimbus and ExpertQA pairs with the local 0.5B model: a "strict" wording
# ("every fact must be stated") made it answer NO to nearly everything; naming paraphrase as
# acceptable and listing what counts as a NO made its answers informative.
JUDGE_SYSTEM = (
    "You check whether evidence supports a claim. Reply YES if the evidence states the claim's main point "
    "(paraphrase is fine). Reply NO if the evidence contradicts the claim, gives a different number, date or name, "
    "or does not mention the claim's main point. Reply with one word: YES or NO."
)


class LLMJudge:
    """A `SupportJudge` that asks a `Generator` for YES/NO on each (claim, evidence) pair.

    Evidence longer than `max_evidence_chars` is cut (small local models have 4k contexts).
    An answer that is neither YES nor NO gives `Verdict(None)`: no finding, counted as undecided.
    """

    def __init__(self, generator: Any, *, max_evidence_chars: int = 6000, max_tokens: int = 4) -> None:
        self.generator = generator
        self.max_evidence_chars = max_evidence_chars
        self.max_tokens = max_tokens

    @property
    def name(self) -> str:
        # read at use time: an OpenAI-compatible generator learns its model name on the first call
        return f"llm:{getattr(self.generator, 'name', type(self.generator).__name__)}"

    @staticmethod
    def focus(claim: str, text: str, budget: int) -> str:
        """`text` cut to `budget` characters by keeping the sentences that share the most words
        with the claim, in their original order: a long passage's supporting sentence is rarely
        its first, and a small model's context is short."""
        t = " ".join(text.split())
        if len(t) <= budget:
            return t
        sents = loose_sentences(t)
        want = content_words(claim)
        ranked = sorted(range(len(sents)), key=lambda i: (-len(content_words(sents[i]) & want), i))
        keep: set[int] = set()
        used = 0
        for i in ranked:
            if used + len(sents[i]) + 1 > budget:
                continue
            keep.add(i)
            used += len(sents[i]) + 1
        if not keep:
            return t[:budget] + "…"
        return " … ".join(sents[i] for i in sorted(keep))

    def messages(self, claim: str, evidence: Mapping[str, str]) -> list[dict[str, str]]:
        budget = max(200, self.max_evidence_chars // max(1, len(evidence)))
        blocks = [f"[{label}] {self.focus(claim, text, budget)}" for label, text in evidence.items()]
        user = ("Evidence:\n" + "\n\n".join(blocks) + f"\n\nClaim: {claim}\n\n"
                "Does the evidence support the claim? Answer YES or NO.")
        return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": user}]

    def judge(self, claim: str, evidence: Mapping[str, str]) -> Verdict:
        reply = self.generator.generate(self.messages(claim, evidence), max_tokens=self.max_tokens, temperature=0.0)
        word = re.sub(r"[^a-z]", " ", str(reply).lower()).split()
        first = word[0] if word else ""
        if first in ("yes", "supported", "true"):
            return Verdict(True, "judge: yes")
        if first in ("no", "not", "unsupported", "false"):
            return Verdict(False, "the judge says the passage does not support it")
        return Verdict(None, f"judge gave no verdict ({' '.join(str(reply).split())[:40]!r})")


# -- the report -------------------------------------------------------------------------------


@dataclass
class CheckReport:
    """Findings of `check_answer`. `clean` when there are none (the refusal is not a finding)."""

    unknown_labels: list[str] = field(default_factory=list)
    uncited_sentences: list[str] = field(default_factory=list)
    unsupported: list[dict[str, Any]] = field(default_factory=list)
    flagged_links: list[dict[str, str]] = field(default_factory=list)
    refusal: bool = False
    #: the answer is only the refusal (no claims)
    refusal_only: bool = False
    cited_labels: list[str] = field(default_factory=list)
    #: sentences citing a user-generated / untrusted source (informational, not a finding)
    untrusted_citations: list[dict[str, str]] = field(default_factory=list)
    sentences: list[Sentence] = field(default_factory=list)
    #: sentences citing docket's summary of the passages that did not fit (informational)
    derived_citations: list[dict[str, str]] = field(default_factory=list)
    #: a structured answer: {"kind": "answer" | "refusal" | "partial", "sentences": n, "reason": ...}
    structured: dict[str, Any] | None = None
    #: a structured answer was expected but the reply is not one (a finding, one line)
    malformed: str | None = None
    stripped_answer: str | None = None
    judge: str | None = None
    judge_undecided: int = 0
    #: label -> source summary, for resolving citations when printing
    sources: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)

    @property
    def clean(self) -> bool:
        return not (self.unknown_labels or self.uncited_sentences or self.unsupported or self.flagged_links
                    or self.malformed)

    @property
    def findings(self) -> int:
        return (len(self.unknown_labels) + len(self.uncited_sentences) + len(self.unsupported) + len(self.flagged_links)
                + (1 if self.malformed else 0))

    def to_json(self) -> dict[str, Any]:
        claims = [s for s in self.sentences if s.kind == "claim"]
        out: dict[str, Any] = {
            "clean": self.clean,
            "unknown_labels": self.unknown_labels,
            "uncited_sentences": self.uncited_sentences,
            "unsupported": self.unsupported,
            "flagged_links": self.flagged_links,
            "refusal": self.refusal,
            "refusal_only": self.refusal_only,
            "cited_labels": self.cited_labels,
            "untrusted_citations": self.untrusted_citations,
            "derived_citations": self.derived_citations,
            "structured": self.structured,
            "malformed": self.malformed,
            "counts": {
                "sentences": len(self.sentences),
                "claims": len(claims),
                "cited_claims": sum(1 for s in claims if s.labels),
                "findings": self.findings,
            },
            "judge": self.judge,
            "judge_undecided": self.judge_undecided,
            "sentences": [s.to_json() for s in self.sentences],
        }
        if self.stripped_answer is not None:
            out["stripped_answer"] = self.stripped_answer
        return out


def _natural(label: str) -> tuple[int, str]:
    m = re.fullmatch(r"S(\d+)", label)
    return (int(m.group(1)), label) if m else (10**9, label)


def _without_links(text: str, links: list[Link]) -> str:
    for lk in sorted(links, key=lambda x: x.start, reverse=True):
        text = text[: lk.start] + (lk.text if lk.kind in ("markdown", "html") else " ") + text[lk.end :]
    return text


#: the longest answer checked, in characters (about 12,000 tokens, past any generated answer): the
#: link check parses the answer as Markdown and as HTML, and some hostile shapes cost it ~0.1 ms a
#: character (an unclosed "<!--" run grows faster: 100,000 characters took 9.5 s, 50,000 2.4 s)
MAX_ANSWER_CHARS = 50_000
#: the most "[" an answer may hold: the link check reads the answer as a Markdown viewer does,
#: and a viewer's link-label scan costs ~0.3 ms for each "[" (hundreds of citations are fine;
#: 100,000 "![" took 33 s); either limit refuses the answer, named, before any work
MAX_ANSWER_BRACKETS = 5_000


def _check_size(answer: str) -> None:
    if len(answer) > MAX_ANSWER_CHARS:
        raise InputError(f"holds {len(answer):,} characters; docket checks answers of at most {MAX_ANSWER_CHARS:,} "
                         "(docket.check.MAX_ANSWER_CHARS): check it in parts", field="answer")
    brackets = answer.count("[")
    if brackets > MAX_ANSWER_BRACKETS:
        raise InputError(f"holds {brackets:,} '[' characters; docket checks answers with at most "
                         f"{MAX_ANSWER_BRACKETS:,} (docket.check.MAX_ANSWER_BRACKETS): check it in parts", field="answer")


def _cited(answer: str, sentences: list[Sentence]) -> list[str]:
    """Every label the answer cites: in its sentences (footnotes resolved) and anywhere in it."""
    return list(dict.fromkeys([lab for s in sentences for lab in s.labels] + labels_in(answer)))


def check_answer(
    answer: str | Mapping[str, Any] | Reply | ParsedReply,
    brief: Any,
    *,
    judge: SupportJudge | None = None,
    allowed_domains: Iterable[str] = (),
    strip: bool = False,
    names: bool = True,
    min_overlap: float = 0.0,
    judge_all: bool = False,
) -> CheckReport:
    """Check `answer` against `brief` (a `Brief`, its JSON dict/text, or a path to it).

    `answer` is free text with [S1] markers, or a structured answer (a `Reply`, `ParsedReply` or
    its JSON as a dict), which goes to `check_structured`.

    `judge` (optional) is asked about every cited claim the lexical check passed (all cited claims
    with `judge_all`). `allowed_domains` lists the domains links may point to (subdomains
    included); `strip` also returns the answer with the other links removed. `names=False`
    turns off the name comparison; `min_overlap` > 0 also flags claims sharing fewer than that
    share of their content words with the cited passages (off by default: paraphrase is normal).
    """
    if isinstance(answer, Mapping | Reply | ParsedReply):
        return check_structured(answer, brief, judge=judge, allowed_domains=allowed_domains, strip=strip, names=names,
                                min_overlap=min_overlap, judge_all=judge_all)
    if not isinstance(answer, str):
        raise InputError("must be text or a structured answer", field="answer")
    _check_size(answer)
    bs = load_brief(brief)
    sentences = split_sentences(answer, bs.refusal)
    return _check(answer, sentences, _cited(answer, sentences), bs, judge=judge, allowed_domains=allowed_domains, strip=strip,
                  names=names, min_overlap=min_overlap, judge_all=judge_all)


def check_structured(
    answer: Any,
    brief: Any,
    *,
    judge: SupportJudge | None = None,
    allowed_domains: Iterable[str] = (),
    strip: bool = False,
    names: bool = True,
    min_overlap: float = 0.0,
    judge_all: bool = False,
) -> CheckReport:
    """Check a structured answer (docket.llm.structured): a `Reply`, a `ParsedReply`, its JSON
    (dict or text). Each sentence is checked with the labels it lists, as the model split it;
    a typed refusal is a refusal. A reply that is not a structured answer is one finding
    (`malformed`); when it is prose rather than broken JSON it is also checked as free text."""
    bs = load_brief(brief)
    if isinstance(answer, Reply):
        parsed = ParsedReply(raw="", reply=answer)
    elif isinstance(answer, ParsedReply):
        parsed = answer
    elif isinstance(answer, Mapping):
        import json as _json

        parsed = parse_reply(_json.dumps(answer))
    elif isinstance(answer, str):
        parsed = parse_reply(answer)
    else:
        raise InputError("must be a structured answer (JSON object) or text", field="answer")
    kw: dict[str, Any] = dict(judge=judge, allowed_domains=allowed_domains, strip=strip, names=names,
                              min_overlap=min_overlap, judge_all=judge_all)
    if parsed.reply is None:
        if parsed.looks_like_json or not parsed.raw.strip():
            report = _check("", [], [], bs, **kw)
        else:  # the endpoint ignored the schema and wrote prose: check what it wrote
            _check_size(parsed.raw)
            prose = split_sentences(parsed.raw, bs.refusal)
            report = _check(parsed.raw, prose, _cited(parsed.raw, prose), bs, **kw)
        report.malformed = parsed.error
        return report
    reply = parsed.reply
    sentences: list[Sentence] = []
    for cs in reply.sentences:
        text = " ".join(cs.text.split())
        if not text:
            continue
        labels = list(dict.fromkeys(list(cs.citations) + labels_in(text)))
        kind = classify(text, bs.refusal)
        if kind == "refusal" and any(classify(t, "") == "claim" for t, r in refusal_parts(text, bs.refusal) if not r):
            kind = "claim"  # "I do not know ...; refunds take 90 days." claims something besides the refusal
        if labels and kind in ("short", "filler", "question", "heading"):
            kind = "claim"  # it cites a passage, so it claims something the passage must hold
        sentences.append(Sentence(text, labels, kind))
    cited = list(dict.fromkeys(lab for s in sentences for lab in s.labels))
    joined = " ".join(s.text for s in sentences)
    _check_size(joined)  # a structured reply's claims, sized as free text is before its split
    report = _check(joined, sentences, cited, bs, **kw)
    if reply.refusal is not None:
        report.refusal = True
        report.refusal_only = not any(s.kind == "claim" for s in sentences)
    report.structured = {"kind": "refusal" if reply.refused else "partial" if reply.partial else "answer",
                         "sentences": len(sentences), "reason": reply.refusal.reason if reply.refusal else None}
    return report


_BLOCK_TAGS = frozenset("br p div li ul ol tr td th table h1 h2 h3 h4 h5 h6 blockquote pre hr section article header "
                        "footer dl dt dd figure figcaption summary details".split())


def _rendered(text: str) -> str:
    """The text of a sentence as a browser shows it when it holds markup or character references:
    parsed by the HTML5 rules (docket.ingest.html5), comments gone, references decoded, an empty
    tag joining what it splits ("9<b></b>0 days" shows "90 days", "1&#48; days" shows "10 days"),
    a block or line break a space. Hidden elements are kept: a claim is checked as written."""
    if "<" not in text and "&" not in text:
        return text
    from docket.ingest.html5 import lexbor

    body = lexbor(f"<body>{text}</body>").body
    if body is None:
        return text
    out: list[str] = []
    for node in body.traverse(include_text=True):
        if node.tag == "-text":
            out.append(node.text_content or "")
        elif node.tag in _BLOCK_TAGS:
            out.append(" ")
    return "".join(out)


#: sentences that need no citation when they only repeat what the brief holds
_NON_CLAIMS = ("heading", "question", "filler", "short")


def _promote_unbacked(sentences: list[Sentence], bs: BriefSources, pfacts: Any) -> None:
    """A heading, question, greeting or short line that states a number, amount, percentage or
    date no passage and not the question holds is a claim ("Refunds take 90 days?", "## Refunds
    take 90 days" when the passages say 10): it needs a citation like any other. A number is
    such a fact when it has a known unit (time, money, size...): "Step 2", "## 3 ways to get a
    refund" and "## 2024 changes" are not claims."""
    asked: PassageFacts | None = None
    for s in sentences:
        if s.kind not in _NON_CLAIMS:
            continue
        facts = [f for f in sentence_facts(_rendered(s.claim), names=False) if f.kind != "number" or canonical_unit(f.unit)]
        if not facts:
            continue
        if asked is None:
            asked = PassageFacts.of(bs.question)
        if any(not asked.supports(f) and not any(pfacts(lab).supports(f) for lab in bs.sources) for f in facts):
            s.kind = "claim"


def _check(
    answer: str,
    sentences: list[Sentence],
    cited: list[str],
    bs: BriefSources,
    *,
    judge: SupportJudge | None,
    allowed_domains: Iterable[str],
    strip: bool,
    names: bool,
    min_overlap: float,
    judge_all: bool,
) -> CheckReport:
    """The checks on sentences already split and labelled (free text or structured); the caller
    has sized the answer (`_check_size`)."""
    domains = normalize_domains(allowed_domains)
    report = CheckReport(sentences=sentences, judge=getattr(judge, "name", None) if judge else None,
                         sources={k: {kk: v for kk, v in s.items() if kk != "text"} for k, s in bs.sources.items()})

    report.unknown_labels = sorted({lab for lab in cited if lab not in bs.sources}, key=_natural)
    report.cited_labels = [lab for lab in cited if lab in bs.sources]
    report.refusal = any(s.kind == "refusal" for s in sentences)
    report.refusal_only = report.refusal and not any(s.kind == "claim" for s in sentences)

    facts_cache: dict[str, PassageFacts] = {}

    def pfacts(label: str) -> PassageFacts:
        if label not in facts_cache:
            facts_cache[label] = PassageFacts.of(bs.evidence(label))
        return facts_cache[label]

    _promote_unbacked(sentences, bs, pfacts)
    for s in sentences:
        if s.kind != "claim":
            continue
        if not s.labels:
            if bs.mode != "no_retrieve":
                report.uncited_sentences.append(s.text)
            continue
        known = [lab for lab in s.labels if lab in bs.sources]
        if not known:
            continue
        for lab in known:
            src = bs.sources[lab]
            if src.get("trust") == "untrusted" or src.get("status") == "user-generated":
                report.untrusted_citations.append({"sentence": s.text, "label": lab, "status": str(src.get("status", ""))})
            if src.get("derived"):
                report.derived_citations.append({"sentence": s.text, "label": lab, "derived": str(src["derived"])})
        claim = _rendered(_without_links(s.claim, find_links(s.claim)))
        label_str = ",".join(known)
        lexical_found = False
        missing = [f for f in sentence_facts(claim, names=names) if not any(pfacts(lab).supports(f) for lab in known)]
        if missing:
            lexical_found = True
            where = " or ".join(known)
            what = "; ".join(f.describe() for f in missing[:4])
            report.unsupported.append({"sentence": s.text, "label": label_str, "labels": known, "by": "lexical",
                                       "reason": f"{what} not in {where}", "missing": [f.surface for f in missing]})
        elif flip := next((why for lab in known if (why := pfacts(lab).negates(claim))), None):
            lexical_found = True  # the statement negated: no model needed to see it
            report.unsupported.append({"sentence": s.text, "label": label_str, "labels": known, "by": "negation",
                                       "reason": f"{flip} ({label_str})"})
        elif min_overlap > 0:
            words = content_words(claim)
            have = set().union(*(content_words(bs.evidence(lab)) for lab in known))
            if words and len(words & have) / len(words) < min_overlap:
                lexical_found = True
                report.unsupported.append({"sentence": s.text, "label": label_str, "labels": known, "by": "overlap",
                                           "reason": f"only {len(words & have)} of its {len(words)} content words are in "
                                                     f"{' or '.join(known)}"})
        if judge is not None and (judge_all or not lexical_found):
            verdict = judge.judge(claim, {lab: bs.evidence(lab) for lab in known})
            if verdict.supported is None:
                report.judge_undecided += 1
            elif verdict.supported is False:
                report.unsupported.append({"sentence": s.text, "label": label_str, "labels": known, "by": "judge",
                                           "reason": verdict.reason or "the judge says it is not supported"})

    if judge is not None:
        report.judge = judge.name  # again: a generator may learn its model name on the first call
    report.flagged_links = [lk.to_json() for lk in flagged_links(answer, domains)]
    if strip:
        report.stripped_answer = strip_links(answer, domains)
    return report
