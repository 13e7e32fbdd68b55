"""The brief as docket 2d0c129 built it (brief/layout.py, render.py, notes.py before the speed
work), kept verbatim as the reference the faster build is compared with byte for byte
(tests/test_brief_speed_equivalence.py). Counting goes straight to the counter, with no
segment or memo shortcut. Not for use outside the tests."""

from __future__ import annotations

from typing import Any

from docket.brief import formats
from docket.brief.clean import datamark, sanitize
from docket.brief.notes import ConflictNote
from docket.brief.render import Rendered, documents_block, header_fields, label_for, sections_of
from docket.brief.result import Brief
from docket.context import Context
from docket.model import RETIRED_STATUSES, Passage
from docket.policy import RenderPolicy
from docket.results import Conflict, Source, TokenCounts


def count(ctx: Context, text: str) -> int:
    return ctx.counter.count(text)


def render_passage(p: Passage, label: str, policy: RenderPolicy) -> Rendered:
    """One passage in `policy.format`. Its header depends on the label (width) and the header
    fields, its body only on the text and trust, so a sizer may count the two apart."""
    fmt = formats.text_format(policy.format)
    text, removed = sanitize(p.text)
    text = text.strip()
    fields = header_fields(p, policy.fields, policy.implicit_defaults and fmt.implicit_defaults, policy.repeated_title)
    shown = datamark(text) if policy.spotlight == "datamark" and fmt.datamarks and p.untrusted else text
    header = fmt.header(label, fields, policy.max_field_chars)
    body = fmt.body(shown)
    return Rendered(block=fmt.join(header, body), text=text, removed=removed, header=header, body=body)


def render_all(passages: list[Passage], policy: RenderPolicy) -> tuple[str, dict[str, dict[str, Any]], int]:
    """The documents block, the label -> source map, and the count of removed characters."""
    blocks: list[str] = []
    sources: dict[str, dict[str, Any]] = {}
    removed = 0
    for n, p in enumerate(passages, 1):
        label = label_for(n)
        r = render_passage(p, label, policy)
        blocks.append(r.block)
        removed += r.removed
        c = p.first
        src: dict[str, Any] = {
            "doc": c.doc,
            "version": c.version,
            "chunks": list(p.ids),
            "title": c.title,
            "section": sections_of(p),
            "date": c.date.isoformat() if c.date else None,
            "status": c.status,
            "trust": p.trust_level,
            "source_type": c.source_type,
            "hits": list(p.hits),
            "score": round(p.score, 6),
            "rank": p.rank,
            "compressed": p.compressed,
            "text": r.text,
        }
        if p.also_in:
            src["also_in"] = list(p.also_in)
        if p.derived:
            src["derived"] = "summary"
            src["covers"] = [dict(c) for c in p.covers]
        sources[label] = src
    return documents_block(blocks, policy.format), sources, removed


def label_conflicts(conflicts: list[dict[str, Any]], sources: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Each conflict with the labels of its two chunks (a chunk merged into another passage takes
    that passage's label), or `in_prompt: false` when they are not two different passages."""
    where: dict[str, str] = {}
    for label, src in sources.items():
        for cid in src["chunks"]:
            where.setdefault(cid, label)
        for extra in src.get("also_in", []):
            for cid in extra["chunks"]:
                where.setdefault(cid, label)
    out = []
    for c in conflicts:
        labels = [where.get(cid) for cid in c["chunks"]]
        item = dict(c)
        if len(labels) == 2 and all(labels) and labels[0] != labels[1]:
            item["labels"] = labels
            if c.get("higher") in c["chunks"]:
                item["higher_label"] = where[c["higher"]]
        else:
            item["in_prompt"] = False
        out.append(item)
    return out


def conflict_notes(conflicts: list[dict[str, Any]]) -> str:
    """The notes for labelled conflicts, one line each, in order, without repeats."""
    lines: list[str] = []
    for c in conflicts:
        note = ConflictNote.of(c)
        if note is not None and note.text() not in lines:
            lines.append(note.text())
    return "\n".join(lines)


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
    old = [label for label, s in sources.items() if s["status"] in RETIRED_STATUSES]
    if info["source"] != "question" and not old:
        return ""
    day = info["date"].isoformat()
    note = f"Note: the documents are the versions in force on {day}"
    note += ", the date the question asks about." if info["source"] == "question" else "."
    if old:
        note += f" {', '.join(old)} {'was' if len(old) == 1 else 'were'} the rule on that date, whatever the status says today."
    return note


def build_brief(passages: list[Passage], ctx: Context, budget: int) -> Brief:
    style = ctx.policy.render.format
    documents, sources, removed = render_all(passages, ctx.policy.render)
    # the per-passage counts were exact up to label widths: verify, and drop from the end if needed
    while count(ctx, documents) > budget and len(passages) > 1:
        worst = max(passages, key=lambda p: (p.untrusted, p.rank))
        passages = [p for p in passages if p is not worst]
        ctx.trace.add("pack", "drop", list(worst.ids), f"rendered block exceeded the budget {budget}; dropped the weakest passage")
        documents, sources, removed = render_all(passages, ctx.policy.render)
    if removed:
        ctx.trace.add("fence", "sanitize", [], f"removed {removed} invisible or control character(s) from passage text",
                      removed=removed)
    conflicts = label_conflicts(ctx.conflicts, sources)
    notes = "\n".join(n for n in (as_of_note(ctx, sources), conflict_notes(conflicts)) if n)
    system = system_text(ctx, style)
    question = question_text(ctx)
    fmt = format_text(ctx)
    user = documents + ("\n\n" + notes if notes else "") + "\n\n" + question + "\n\n" + fmt
    tokens = {
        "system": count(ctx, system),
        "documents": count(ctx, documents),
        "passage_text": sum(count(ctx, s["text"]) for s in sources.values()),
        "notes": count(ctx, notes) if notes else 0,
        "question": count(ctx, question),
        "format": count(ctx, fmt),
        "user": count(ctx, user),
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
        sources={label: Source.of(s) for label, s in sources.items()},
        tokens=TokenCounts.of(tokens),
        trace=ctx.trace,  # type: ignore[arg-type]  # a Trace: made a list when first read
        conflicts=[Conflict.of(c) for c in conflicts],
        warnings=list(ctx.warnings),
        budget=budget,
        refusal=ctx.policy.brief.refusal,
        passages=passages,
        anthropic_request=anthropic_request(ctx, passages, sources, notes, fmt),
    )


def anthropic_request(ctx: Context, passages: list[Passage], sources: dict[str, dict[str, Any]], notes: str,
                      fmt: str) -> dict[str, Any]:
    """Documents as content blocks with citations enabled; the label and header fields go in
    `context` (shown to the model, never cited), status and trust always; the notes, the
    question and the format last. Escaping is the blocks format's (brief/formats.py)."""
    blocks = formats.blocks()
    pol = ctx.policy.render
    wanted = [f for f in pol.fields if f != "title"]  # the title has its own slot
    content: list[dict[str, Any]] = []
    for p, (label, s) in zip(passages, sources.items()):
        fields = header_fields(p, wanted, implicit_defaults=False, repeated_title=True)
        content.append(blocks.document(label, s["title"], fields, s["text"], pol.max_field_chars))
    tail = "\n\n".join(x for x in (notes, blocks.question(ctx.question), fmt) if x)
    content.append({"type": "text", "text": tail})
    return {"system": system_text(ctx, blocks.name), "messages": [{"role": "user", "content": content}]}
