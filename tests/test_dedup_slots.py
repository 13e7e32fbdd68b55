"""Move 2 compares a passage only with the kept passages it may duplicate (by slot), not with
every kept slot: checked against the scan over every slot (kept here as the reference) on pools
of near-copies with mixed authorities, exact copies and conflict pairs."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from docket.embed import HashEmbedder
from docket.model import Passage
from docket.moves import dedup
from docket.moves.versions import authority

from helpers import context, mk, passages


def reference(ps: list[Passage], ctx: Any) -> list[Passage]:
    """collapse() as it was: for each passage, every kept slot in order."""
    pol = ctx.policy.dedup
    sims = ctx.similarities([p.first for p in ps])
    conflicts = {frozenset(c["chunks"]) for c in ctx.conflicts}
    hashes = [dedup.text_hash(p.text) for p in ps]
    kept: list[int] = []
    slots: list[Passage] = []
    for i, p in enumerate(ps):
        match, cos = None, None
        for slot, k in enumerate(kept):
            if frozenset((p.first.id, ps[k].first.id)) in conflicts:
                continue
            if hashes[i] == hashes[k]:
                match, cos = slot, 1.0
                break
            sim = float(sims[i, k])
            if sim >= pol.threshold and (cos is None or sim > cos):
                match, cos = slot, sim
        if match is None:
            kept.append(i)
            slots.append(p)
            continue
        holder = slots[match]
        a_new, a_old = authority(p.first, ctx.policy.versions), authority(holder.first, ctx.policy.versions)
        if a_new > a_old:
            slots[match] = p.with_(score=max(p.score, holder.score), rank=min(p.rank, holder.rank),
                                   also_in=p.also_in + (dedup._provenance(holder, cos),) + holder.also_in)
            kept[match] = i
        else:
            slots[match] = holder.with_(also_in=holder.also_in + (dedup._provenance(p, cos),) + p.also_in)
    return slots


_WORDS = ["refund", "within", "days", "cancel", "fee"]
_SOURCES = [None, "policy", "help", "forum"]


@settings(max_examples=600, deadline=None)
@given(st.lists(st.tuples(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=3), st.sampled_from(_SOURCES),
                          st.booleans()), min_size=1, max_size=25),
       st.lists(st.tuples(st.integers(0, 24), st.integers(0, 24)), max_size=30))
def test_collapse_matches_the_scan_over_every_slot(items: list[tuple[list[str], str | None, bool]],
                                                   conflict_pairs: list[tuple[int, int]]) -> None:
    chunks = [mk(f"c{n}", doc=f"d{n}", text=" ".join(ws) + (" extra" if flip else ""), source_type=src)
              for n, (ws, src, flip) in enumerate(items)]
    ctx = context(chunks, embedder=HashEmbedder(16))  # 16 dimensions: many near-copies
    for a, b in conflict_pairs:
        if a < len(chunks) and b < len(chunks) and a != b:
            ctx.conflicts.append({"chunks": [f"c{a}", f"c{b}"], "kind": "equal_authority", "reason": "test"})
    ps = passages(chunks)
    got = dedup.collapse(list(ps), ctx)
    want = reference(list(ps), ctx)
    assert [(p.ids, p.score, p.rank, p.also_in) for p in got] == [(p.ids, p.score, p.rank, p.also_in) for p in want]
