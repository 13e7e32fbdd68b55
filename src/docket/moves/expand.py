"""Move 3: give each chunk back its context.

The top N hits grow to their neighbours (or their parent section) inside the same document
version and the same section: a passage never spans two sections, so its header names the one
section its text belongs to (pol3-2's "They can be cancelled" stays under "Monthly plans").
Growth never pastes back a chunk that Move 2 dropped as a copy. Expanded spans that overlap or
touch are merged, and a hit that already lies inside a span is absorbed into it, so no chunk is
pasted twice. Every grown passage is capped in tokens (`max_passage_tokens`, and at most
`max_budget_share` of the evidence budget); the trace says when a cap stops expansion.
Expansion runs after ranking, never before: a reranker would only read the first part of a
grown window, after we paid to build it.
"""

from __future__ import annotations

from itertools import chain
from operator import attrgetter

from docket.context import Context
from docket.model import Chunk, Passage
from docket.sizing import raw_budget
from docket.store.base import neighbours, section_of

MOVE = "expand"


def _text_tokens(chunks: list[Chunk], ctx: Context) -> int:
    return ctx.tokens(" ".join(c.text.strip() for c in chunks))


def passage_cap(ctx: Context, limit: int) -> tuple[int, str]:
    """The most tokens a grown passage's text may have: `limit` (max_passage_tokens or
    max_section_tokens), and never more than `max_budget_share` of the evidence budget, so the
    grown top hit still fits the prompt with room for other evidence. Returns (cap, which rule)."""
    pol = ctx.policy.expand
    pack = ctx.policy.pack
    budget = raw_budget(pack, 0 if pack.budget is not None else ctx.sizer.fixed_tokens())
    share = int(pol.max_budget_share * max(budget, 0))
    if share < limit:
        return max(share, 1), f"{pol.max_budget_share:g} of the evidence budget {budget} (expand.max_budget_share)"
    return limit, "expand.max_section_tokens" if limit == pol.max_section_tokens and pol.mode == "section" else \
        "expand.max_passage_tokens"


def _cap(span: list[Chunk], hit: Chunk, ctx: Context) -> list[Chunk]:
    """Shrink a span around its hit until its text fits the passage cap (farthest chunk first);
    the trace says which chunks the cap kept out, and which rule set it."""
    cap, rule = passage_cap(ctx, ctx.policy.expand.max_passage_tokens)
    before = list(span)
    while len(span) > 1 and _text_tokens(span, ctx) > cap:
        i = span.index(hit)
        # drop the end farther from the hit; ties drop the trailing chunk
        if i >= len(span) - 1 - i:
            span = span[1:]
        else:
            span = span[:-1]
    if len(span) < len(before):
        left_out = [c.id for c in before if c not in span]
        ctx.trace.add(MOVE, "cap", [c.id for c in span],
                      f"expansion of {hit.id} stopped by the cap: {', '.join(left_out)} left out, "
                      f"{_text_tokens(before, ctx)} tokens with them > {cap} ({rule}); "
                      f"{'no neighbour fits' if len(span) == 1 else f'{len(span)} chunks kept'}",
                      tokens=_text_tokens(span, ctx), cap=cap, without_cap=_text_tokens(before, ctx), left_out=left_out)
    return span


def _same_section(a: Chunk, b: Chunk) -> bool:
    return a.section == b.section


def _window(hit: Chunk, ctx: Context, excluded: dict[str, str]) -> list[Chunk]:
    """The hit and its neighbours within the window, contiguous around it: growth stops at a
    section boundary (a passage has one section, so its header never reads "Monthly plans /
    Annual plans"), at a chunk of another trust level (a stranger's text stored inside an
    official document never borrows its header and authority, nor labels it untrusted) and at a
    chunk that Move 2 dropped as a copy (never pasted back)."""
    span = neighbours(ctx.store, hit, ctx.policy.expand.window)
    if not any(c.id == hit.id for c in span):
        return [hit]
    i = next(k for k, c in enumerate(span) if c.id == hit.id)
    lo, hi = i, i
    stops: list[str] = []
    for step in (-1, 1):
        k = i + step
        while 0 <= k < len(span):
            c = span[k]
            if c.id in excluded:
                stops.append(f"{c.id}: Move 2 dropped it as a copy of {excluded[c.id]}")
                break
            if not _same_section(c, hit):
                stops.append(f"{c.id}: section {c.section!r}, not {hit.section!r} (a passage keeps one section)")
                break
            if c.untrusted != hit.untrusted:
                stops.append(f"{c.id}: {c.trust_level}, not {hit.trust_level} (a passage keeps one trust level)")
                break
            lo, hi = min(lo, k), max(hi, k)
            k += step
    if stops:
        ctx.trace.add(MOVE, "boundary", [hit.id], f"{hit.id} not grown into " + "; ".join(stops))
    return span[lo : hi + 1]


def _grow(p: Passage, ctx: Context, excluded: dict[str, str]) -> list[Chunk]:
    pol = ctx.policy.expand
    hit = p.first
    if pol.mode == "section" and hit.section:
        sec = section_of(ctx.store, hit.doc, hit.version, hit.section)
        cap, rule = passage_cap(ctx, pol.max_section_tokens)
        copies = [c.id for c in sec if c.id in excluded]
        mixed = [c.id for c in sec if c.untrusted != hit.untrusted]
        if sec and not copies and not mixed and _text_tokens(sec, ctx) <= cap:
            return sec
        if mixed:
            ctx.trace.add(MOVE, "fallback", [hit.id], f"section {hit.section!r} holds {', '.join(mixed)} of another "
                          f"trust level than {hit.id}; using a window of {pol.window} instead")
        elif copies:
            ctx.trace.add(MOVE, "fallback", [hit.id], f"section {hit.section!r} holds {', '.join(copies)}, which Move 2 "
                          f"dropped as copies; using a window of {pol.window} instead")
        elif sec:
            ctx.trace.add(MOVE, "fallback", [hit.id], f"section {hit.section!r} has {_text_tokens(sec, ctx)} tokens "
                          f"> {cap} ({rule}); using a window of {pol.window} instead", tokens=_text_tokens(sec, ctx), cap=cap)
    return _cap(_window(hit, ctx, excluded), hit, ctx)


def _pos(store_chunks: list[Chunk]) -> dict[str, int]:
    return {c.id: i for i, c in enumerate(store_chunks)}


_ALSO_IN, _IDS = attrgetter("also_in"), attrgetter("ids")


def dropped_copies(passages: list[Passage]) -> dict[str, str]:
    """Chunk id -> the passage it was folded into, for every copy Move 2 dropped (its provenance
    stays in the kept passage's `also_in`): expansion must never paste such a chunk back."""
    out: dict[str, str] = {}
    if not any(map(_ALSO_IN, passages)):
        return out  # no copy was folded (the common case): no Python step per passage
    for p in passages:
        for extra in p.also_in:
            for cid in extra.get("chunks", []):
                if cid not in p.ids:
                    out.setdefault(cid, p.first.id)
    return out


def restore(passages: list[Passage], ctx: Context) -> list[Passage]:
    pol = ctx.policy.expand
    if pol.top_n == 0 or not passages:
        return passages
    excluded = dropped_copies(passages)
    grown: list[Passage] = []
    for p in passages[: pol.top_n]:
        span = _grow(p, ctx, excluded)
        if len(span) > 1 or span[0].id != p.first.id:
            added = [c.id for c in span if c.id not in p.ids]
            if added:
                ctx.trace.add(MOVE, "expand", [c.id for c in span],
                              f"{p.first.id} (rank {p.rank}) grown by {', '.join(added)} "
                              f"({'section' if pol.mode == 'section' else f'window ±{pol.window}'})",
                              tokens=_text_tokens(span, ctx))
        grown.append(p.with_(chunks=tuple(span)))
    out = _absorb(_merge(grown, ctx), passages[pol.top_n :], ctx)
    return _drop_repeats(out, ctx)


def _merge(grown: list[Passage], ctx: Context) -> list[Passage]:
    """Grown spans of one document version that overlap or touch become one passage; when the
    two together exceed the cap, the later one loses the chunks it shares."""
    pol = ctx.policy.expand
    merged: list[Passage] = []
    for g in sorted(grown, key=lambda x: x.rank):
        target = next((m for m in merged if _joinable(m, g, ctx)), None)
        if target is None:
            merged.append(g)
            continue
        joined = _join(target, g, ctx)
        cap, rule = passage_cap(ctx, pol.max_passage_tokens)
        if _text_tokens(list(joined.chunks), ctx) > cap:
            # too big together: keep both, but the later one loses the chunks it shares
            trimmed = tuple(c for c in g.chunks if c.id not in set(target.ids))
            if trimmed:
                merged.append(g.with_(chunks=trimmed))
                ctx.trace.add(MOVE, "trim", [c.id for c in trimmed], f"span of {g.first.id} overlaps {target.hits[0]}'s; merged they "
                              f"would exceed {cap} tokens ({rule}), so the shared chunks stay with the better hit", cap=cap)
            continue
        merged[merged.index(target)] = joined
        ctx.trace.add(MOVE, "merge", list(joined.ids), f"spans of {', '.join(target.hits)} and {', '.join(g.hits)} "
                      "overlap or touch in the same document version: one passage, document order")
    return merged


def _absorb(merged: list[Passage], remaining: list[Passage], ctx: Context) -> list[Passage]:
    """Every other hit: absorbed when a grown span already holds it, else it stays as it is.
    `holding` maps a chunk id to the passages (positions in `out`, in order) that contain it."""
    out = list(merged)
    holding: dict[str, list[int]] = {}
    for pos, m in enumerate(out):
        for cid in m.ids:
            holding.setdefault(cid, []).append(pos)
    # an appended passage can hold a later hit only if chunk ids repeat: when every remaining
    # passage is one distinct chunk, only the grown spans need looking up
    ids = [p.ids[0] for p in remaining if len(p.chunks) == 1]
    register = len(ids) != len(remaining) or len(set(ids)) != len(ids)
    if not register and holding.keys().isdisjoint(ids):
        out.extend(remaining)  # no grown span holds a remaining hit, and none of them can hold another
        return out
    for p in remaining:
        at = None
        for pos in holding.get(p.first.id, ()):
            if out[pos].doc == p.doc and out[pos].version == p.version:
                at = pos
                break
        if at is not None:
            holder = out[at]
            out[at] = holder.with_(hits=holder.hits + p.hits, score=max(holder.score, p.score),
                                   also_in=holder.also_in + p.also_in)
            ctx.trace.add(MOVE, "absorb", [p.first.id], f"{p.first.id} (rank {p.rank}) is already inside the passage "
                          f"grown from {holder.hits[0]}")
            continue
        if register:
            n = len(out)
            for cid in p.ids:
                held = holding.get(cid)
                if held is None:
                    holding[cid] = [n]
                else:
                    held.append(n)
        out.append(p)
    return out


def _drop_repeats(out: list[Passage], ctx: Context) -> list[Passage]:
    """A grown span may have swallowed a chunk that is also a later standalone passage: drop the
    repeat (or the chunks it shares with a better-ranked passage)."""
    ordered = sorted(out, key=attrgetter("rank", "ids"))
    every = list(chain.from_iterable(map(_IDS, ordered)))
    if len(set(every)) == len(every):
        return ordered  # no chunk is in two passages: nothing to drop or trim
    seen: set[str] = set()
    final: list[Passage] = []
    for p in ordered:
        if not seen.isdisjoint(p.ids):
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
    """Spans of one document version, one section and one trust level that overlap or touch."""
    if (a.doc, a.version) != (b.doc, b.version) or a.untrusted != b.untrusted:
        return False
    if {c.section for c in a.chunks} != {c.section for c in b.chunks}:
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
