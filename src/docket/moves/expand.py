"""Move 3: give each chunk back its context.

The top N hits grow to their neighbours (or their parent section) inside the same document
version. Expanded spans that overlap or touch are merged, and a hit that already lies inside a
span is absorbed into it, so no chunk is pasted twice. Every grown passage is capped in tokens.
Expansion runs after ranking, never before: a reranker would only read the first part of a
grown window, after we paid to build it.
"""

from __future__ import annotations

from docket.context import Context
from docket.model import Chunk, Passage
from docket.store.base import neighbours, section_of

MOVE = "expand"


def _text_tokens(chunks: list[Chunk], ctx: Context) -> int:
    return ctx.tokens(" ".join(c.text.strip() for c in chunks))


def _cap(span: list[Chunk], hit: Chunk, ctx: Context) -> list[Chunk]:
    """Shrink a span around its hit until its text fits the passage cap (farthest chunk first)."""
    cap = ctx.policy.expand.max_passage_tokens
    before = len(span)
    while len(span) > 1 and _text_tokens(span, ctx) > cap:
        i = span.index(hit)
        # drop the end farther from the hit; ties drop the trailing chunk
        if i >= len(span) - 1 - i:
            span = span[1:]
        else:
            span = span[:-1]
    if len(span) < before:
        ctx.trace.add(MOVE, "cap", [c.id for c in span], f"span around {hit.id} cut from {before} to {len(span)} chunks "
                      f"to stay within {cap} tokens", tokens=_text_tokens(span, ctx))
    return span


def _grow(p: Passage, ctx: Context) -> list[Chunk]:
    pol = ctx.policy.expand
    hit = p.first
    if pol.mode == "section" and hit.section:
        sec = section_of(ctx.store, hit.doc, hit.version, hit.section)
        if sec and _text_tokens(sec, ctx) <= pol.max_section_tokens:
            return sec
        if sec:
            ctx.trace.add(MOVE, "fallback", [hit.id], f"section {hit.section!r} has {_text_tokens(sec, ctx)} tokens "
                          f"> {pol.max_section_tokens}; using a window of {pol.window} instead")
    span = neighbours(ctx.store, hit, pol.window)
    if not any(c.id == hit.id for c in span):
        span = [hit]
    return _cap(span, hit, ctx)


def _pos(store_chunks: list[Chunk]) -> dict[str, int]:
    return {c.id: i for i, c in enumerate(store_chunks)}


def restore(passages: list[Passage], ctx: Context) -> list[Passage]:
    pol = ctx.policy.expand
    if pol.top_n == 0 or not passages:
        return passages
    grown: list[Passage] = []
    for p in passages[: pol.top_n]:
        span = _grow(p, ctx)
        if len(span) > 1 or span[0].id != p.first.id:
            added = [c.id for c in span if c.id not in p.ids]
            if added:
                ctx.trace.add(MOVE, "expand", [c.id for c in span],
                              f"{p.first.id} (rank {p.rank}) grown by {', '.join(added)} "
                              f"({'section' if pol.mode == 'section' else f'window ±{pol.window}'})",
                              tokens=_text_tokens(span, ctx))
        grown.append(p.with_(chunks=tuple(span)))

    # merge grown spans of one document version that overlap or touch
    merged: list[Passage] = []
    for g in sorted(grown, key=lambda x: x.rank):
        target = next((m for m in merged if _joinable(m, g, ctx)), None)
        if target is None:
            merged.append(g)
            continue
        joined = _join(target, g, ctx)
        if _text_tokens(list(joined.chunks), ctx) > pol.max_passage_tokens:
            # too big together: keep both, but the later one loses the chunks it shares
            trimmed = tuple(c for c in g.chunks if c.id not in set(target.ids))
            if trimmed:
                merged.append(g.with_(chunks=trimmed))
                ctx.trace.add(MOVE, "trim", [c.id for c in trimmed], f"span of {g.first.id} overlaps {target.hits[0]}'s; merged they "
                              f"would exceed {pol.max_passage_tokens} tokens, so the shared chunks stay with the better hit")
            continue
        merged[merged.index(target)] = joined
        ctx.trace.add(MOVE, "merge", list(joined.ids), f"spans of {', '.join(target.hits)} and {', '.join(g.hits)} "
                      "overlap or touch in the same document version: one passage, document order")

    # every other hit: absorbed when a grown span already holds it, else it stays as it is
    out = list(merged)
    for p in passages[pol.top_n :]:
        holder = next((m for m in out if m.doc == p.doc and m.version == p.version and p.first.id in m.ids), None)
        if holder is not None:
            out[out.index(holder)] = holder.with_(hits=holder.hits + p.hits, score=max(holder.score, p.score),
                                                  also_in=holder.also_in + p.also_in)
            ctx.trace.add(MOVE, "absorb", [p.first.id], f"{p.first.id} (rank {p.rank}) is already inside the passage "
                          f"grown from {holder.hits[0]}")
            continue
        out.append(p)
    # a grown span may have swallowed a chunk that is also a later standalone passage: drop the repeat
    seen: set[str] = set()
    final: list[Passage] = []
    for p in sorted(out, key=lambda x: (x.rank, x.ids)):
        if any(i in seen for i in p.ids):
            rest = tuple(c for c in p.chunks if c.id not in seen)
            shared = [i for i in p.ids if i in seen]
            if not rest:
                ctx.trace.add(MOVE, "absorb", list(p.ids), "every chunk of this passage is already in a better-ranked one")
                continue
            ctx.trace.add(MOVE, "trim", shared, f"already in a better-ranked passage; kept {', '.join(c.id for c in rest)}")
            p = p.with_(chunks=rest)
        seen.update(p.ids)
        final.append(p)
    return final


def _joinable(a: Passage, b: Passage, ctx: Context) -> bool:
    if (a.doc, a.version) != (b.doc, b.version):
        return False
    order = _pos(ctx.store.chunks_of(a.doc, a.version))
    ia = [order[i] for i in a.ids if i in order]
    ib = [order[i] for i in b.ids if i in order]
    if not ia or not ib:
        return False
    return min(ib) <= max(ia) + 1 and min(ia) <= max(ib) + 1


def _join(a: Passage, b: Passage, ctx: Context) -> Passage:
    order = _pos(ctx.store.chunks_of(a.doc, a.version))
    chunks = {c.id: c for c in a.chunks + b.chunks}
    ids = sorted(chunks, key=lambda i: order.get(i, 0))
    return a.with_(chunks=tuple(chunks[i] for i in ids), hits=a.hits + b.hits, score=max(a.score, b.score),
                   rank=min(a.rank, b.rank), also_in=a.also_in + b.also_in)
