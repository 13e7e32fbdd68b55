"""The five blocks of the answer brief, stable text first.

    system:  1 role · 2 ground rules (with the literal refusal sentence)
    user:    3 documents · (conflict notes) · 4 the question · 5 format + the rule worth repeating

The system message never changes between questions, so a provider's prompt cache holds it;
everything per-query comes after it. Only docket's own words and labels stand outside the
fence: conflict notes are fixed templates (brief/notes.py), and per-request text (the question,
and any other text a caller adds to the user message) goes through the format's `inline`.
"""

from __future__ import annotations

from typing import Any

from docket import counting
from docket.brief import formats
from docket.brief.notes import conflict_notes, label_conflicts
from docket.brief.render import Entry, entry, policy_key, render_entries
from docket.brief.result import Brief
from docket.context import Context
from docket.model import Passage, is_retired
from docket.results import Conflict, Provenance, Source, TokenCounts

#: with compress.summary on (stated whether or not this query needed a summary, so the system
#: message stays the same between queries and a provider's prompt cache keeps it)
DERIVED_RULE = ("A document with status derived is a summary docket wrote of documents that did not fit, not a "
                "source: never quote it as policy or as a rule, and prefer the full documents; what it says of an "
                "untrusted document is still an outsider's claim.")


def ground_rules(ctx: Context, style: str) -> list[str]:
    """The system rules for format `style` (a registered format name): its fence and trust
    sentences come from the format, so the rules name the marks exactly as it writes them."""
    pol = ctx.policy.brief
    fmt = formats.get(style)
    marks = fmt.trust_rule
    if fmt.implicit_defaults and ctx.policy.render.implicit_defaults:
        marks += formats.IMPLICIT_RULE
    if fmt.datamarks and ctx.policy.render.spotlight == "datamark":
        marks += formats.DATAMARK_RULE
    rules = [
        "Answer only from the documents provided with the question.",
        fmt.fence_rule,
        marks,
        "Official policy outranks help articles, and help articles outrank user posts.",
        "Cite every factual sentence with the label of the document it comes from, like [S1]. "
        "Use only labels that appear in the documents.",
        "If the documents disagree, say that they disagree and cite both.",
        f'If the documents do not answer the question, reply exactly: "{pol.refusal}"',
    ]
    if ctx.policy.compress.summary:
        rules.append(DERIVED_RULE)
    return rules + list(pol.extra_rules)


def system_text(ctx: Context, style: str) -> str:
    rules = "\n".join(f"{i}. {r}" for i, r in enumerate(ground_rules(ctx, style), 1))
    return f"{ctx.policy.brief.role}\n\nGround rules:\n{rules}"


def question_text(ctx: Context, style: str | None = None) -> str:
    """The question as format `style` (default: the policy's) writes it: it cannot open, close
    or forge a document there."""
    return formats.get(style or ctx.policy.render.format).question(ctx.question)


def format_text(ctx: Context) -> str:
    """Block 5: the answer format plus the rule worth repeating after the long documents.

    By default that is the citation rule only. Repeating the refusal sentence last as well made
    a small local model (Qwen2.5-Coder 0.5B) refuse a question its documents answered; the
    refusal stays in the system rules either way. `brief.repeat` chooses."""
    pol = ctx.policy.brief
    cite = "Cite every factual sentence with its label, like [S1]."
    refuse = f'If the documents do not answer the question, reply exactly: "{pol.refusal}"'
    tail = {"cite": cite, "refusal": refuse, "both": f"{cite} {refuse}"}[pol.repeat]
    return f"{pol.answer_format} {tail}"


def as_of_note(ctx: Context, sources: dict[str, dict[str, Any]]) -> str:
    """When the documents are not today's rules (the question asks about another date, or a
    passage's status says it has been retired since), say which date they hold. Labels and a
    date only, in a fixed sentence."""
    info = ctx.as_of
    if not info:
        return ""
    # a stranger's post is never "the rule", whatever its status
    old = [label for label, s in sources.items() if is_retired(s["status"]) and s.get("trust") != "untrusted"]
    if info["source"] != "question" and not old:
        return ""
    day = info["date"].isoformat()
    note = f"Note: the documents are the versions in force on {day}"
    note += ", the date the question asks about." if info["source"] == "question" else "."
    if old:
        note += f" {', '.join(old)} {'was' if len(old) == 1 else 'were'} the rule on that date, whatever the status says today."
    return note


def fixed_tokens(ctx: Context) -> int:
    """Tokens of everything in the brief that is not evidence (for the backward budget)."""
    style = ctx.policy.render.format
    counter = ctx.counter
    return (counting.count_repeated(counter, system_text(ctx, style)) + ctx.tokens(question_text(ctx))
            + counting.count_repeated(counter, format_text(ctx)))


def documents_tokens(passages: list[Passage], ctx: Context) -> int:
    """Tokens of the documents block the brief writes for `passages` (labels S1.. in this order)."""
    entries, _, _ = render_entries(passages, ctx.policy.render, ctx.caches)
    parts = formats.text_format(ctx.policy.render.format).documents_parts([e.rendered.block for e in entries])
    return counting.count_parts(ctx.counter, parts)


def build_brief(passages: list[Passage], ctx: Context, budget: int) -> Brief:
    """The five-block brief of `passages` in their final order (the steps have chosen, ordered
    and fitted them: this only builds)."""
    style = ctx.policy.render.format
    text_fmt = formats.text_format(style)
    counter = ctx.counter
    entries, sources, removed = render_entries(passages, ctx.policy.render, ctx.caches)
    parts = text_fmt.documents_parts([e.rendered.block for e in entries])
    documents_tokens = counting.count_parts(counter, parts)  # the assembler's fit step checked it against the budget
    documents = "".join(parts)
    if removed:
        ctx.trace.add("fence", "sanitize", [], f"removed {removed} invisible or control character(s) from passage text",
                      removed=removed)
    conflicts = label_conflicts(ctx.conflicts, sources)
    notes = "\n".join(n for n in (as_of_note(ctx, sources), conflict_notes(conflicts)) if n)
    system = system_text(ctx, style)
    question = question_text(ctx)
    fmt = format_text(ctx)
    # user = documents + ("\n\n" + notes if notes else "") + "\n\n" + question + "\n\n" + fmt, in pieces
    # that count_parts can add up (the documents' pieces counted above are looked up, not re-tokenised)
    user_parts = [*parts[:-1], parts[-1] + "\n\n", *((notes + "\n\n",) if notes else ()), question + "\n\n", fmt]
    user = "".join(user_parts)
    tokens = {
        "system": counting.count_repeated(counter, system),
        "documents": documents_tokens,
        "passage_text": sum(ctx.tokens(s["text"]) for s in sources.values()),
        "notes": ctx.tokens(notes) if notes else 0,
        "question": ctx.tokens(question),
        "format": counting.count_repeated(counter, fmt),
        "user": counting.count_parts(counter, user_parts),
    }
    tokens["tags"] = tokens["documents"] - tokens["passage_text"]
    tokens["total"] = tokens["system"] + tokens["user"]
    tokens["passages"] = len(sources)
    return Brief(
        found=True,
        question=ctx.question,
        system=system,
        user=user,
        documents=documents,
        sources={label: typed_source(s) for label, s in sources.items()},
        tokens=TokenCounts.of(tokens),
        trace=ctx.trace,  # type: ignore[arg-type]  # a Trace: made a list when first read
        conflicts=[Conflict.of(c) for c in conflicts],
        warnings=list(ctx.warnings),
        budget=budget,
        refusal=ctx.policy.brief.refusal,
        passages=passages,
        anthropic_request=anthropic_request(ctx, passages, sources, notes, fmt, entries),
    )


_SOURCE_KEYS = frozenset(Source._KEYS)


def typed_source(src: dict[str, Any]) -> Source:
    """`Source.of(src)`, the short way when every key is one Source knows (what render_parts
    writes unless a passage is a summary): the same object, key order included."""
    if not src.keys() <= _SOURCE_KEYS:
        return Source.of(src)
    also = src.get("also_in")
    fields = {**src, "also_in": [Provenance.of(a) for a in also]} if also else src
    return Source(**fields, key_order=list(src))


def anthropic_request(ctx: Context, passages: list[Passage], sources: dict[str, dict[str, Any]], notes: str,
                      fmt: str, entries: list[Entry] | None = None) -> dict[str, Any]:
    """Documents as content blocks with citations enabled; the label and header fields go in
    `context` (shown to the model, never cited), status and trust always; the notes, the
    question and the format last. Escaping is the blocks format's (brief/formats.py). `entries`:
    the passages' render entries when the caller has them (render.render_entries)."""
    blocks = formats.blocks()
    pol = ctx.policy.render
    if entries is None:
        key = policy_key(pol)
        entries = [entry(p, label, pol, key, ctx.caches) for p, label in zip(passages, sources)]
    content: list[dict[str, Any]] = []
    for p, e, (label, s) in zip(passages, entries, sources.items()):
        title, context = e.request_parts(p, label, pol)
        content.append(blocks.block(title, context, s["text"]))
    tail = "\n\n".join(x for x in (notes, blocks.question(ctx.question), fmt) if x)
    content.append({"type": "text", "text": tail})
    return {"system": system_text(ctx, blocks.name), "messages": [{"role": "user", "content": content}]}


def not_found_brief(ctx: Context, budget: int = 0) -> Brief:
    return Brief(
        found=False,
        question=ctx.question,
        system="",
        user="",
        documents="",
        sources={},
        tokens=TokenCounts(system=0, documents=0, question=0, total=0, passages=0),
        trace=ctx.trace,  # type: ignore[arg-type]  # a Trace: made a list when first read
        conflicts=[],
        warnings=list(ctx.warnings),
        budget=budget,
        refusal=ctx.policy.brief.refusal,
    )
