"""Move 2: collapse duplicates, keep variety.

Exact copies are caught by a hash of the normalised text, near copies by the cosine between
their vectors. Of a duplicate group the copy with the highest *authority* is kept (a help
article that copies the policy must not stand in for it), at the group's best rank, and the
dropped copies stay on as extra provenance of the kept passage. Pairs that Move 1 flagged as a
conflict are never collapsed: they differ in the detail that matters.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from docket import deadline
from docket.context import Context
from docket.features import copy_values
from docket.model import Passage
from docket.moves import reach
from docket.moves.versions import ClaimsReads, authorities, authority, outranks
from docket.text import copy_hash as text_hash
from docket.text import copy_key as normalize

MOVE = "dedup"


__all__ = ["collapse", "mmr", "normalize", "text_hash"]


def _provenance(p: Passage, cosine: float | None) -> dict[str, Any]:
    c = p.first
    out: dict[str, Any] = {"chunks": list(p.ids), "doc": c.doc, "version": c.version, "title": c.title,
                           "section": c.section, "status": c.status}
    if c.source_type:
        out["source_type"] = c.source_type
    if cosine is not None:
        out["cosine"] = round(cosine, 4)
    return out


def collapse(passages: list[Passage], ctx: Context) -> list[Passage]:
    pol = ctx.policy.dedup
    if not passages:
        return passages
    if ctx.has_vectors():
        reach.ensure(passages, ctx, MOVE, authorities)  # what can reach the prompt: compared with the pool, not every pair
    sims, near_rows, near_cols = reach.similar_pairs(passages, ctx, pol.threshold) if ctx.has_vectors() else (None, [], [])
    conflicts = {frozenset(c["chunks"]) for c in ctx.conflicts}
    feats = ctx.passage_features(passages)
    # compared for equality only: every passage one whole chunk, its chunk's copy value (features.copy_values:
    # a copy hash only where two share a sketch), which the reachable set read for this pool already
    hashes: list[str | int] | None = None
    if None not in feats:
        hashes = reach.hashes_of(passages, ctx)
        if hashes is None:
            hashes = copy_values(feats, [p.first for p in passages])
    else:
        hashes = [f.copy_hash(p.first) if f is not None else text_hash(p.text) for p, f in zip(passages, feats)]
    restated = _restated_pairs(passages, ctx, feats)  # a pasted table of values: a copy below the cosine threshold
    related = _related(near_rows, near_cols, restated, hashes)
    slots = _Slots()
    for i in sorted(related):
        slots.keep_until(passages, i)  # the passages before it that duplicate nothing, as they are
        deadline.check()  # a request's budget (docket.deadline) bounds near-duplicate floods
        p = passages[i]
        near_i = related[i]
        match, cos, exact = None, None, False
        # the kept passages it may duplicate, in slot order (not every slot: linear, not quadratic)
        for slot, k in sorted((slots.slot_of[k], k) for k in near_i if k in slots.slot_of):
            if frozenset((p.first.id, passages[k].first.id)) in conflicts:
                continue
            if hashes[i] == hashes[k]:
                match, cos, exact = slot, 1.0, True
                break
            if (k, i) in restated and match is None:
                match, cos = slot, float(sims[i, k]) if sims is not None else None
                continue
            if sims is not None:
                sim = float(sims[i, k])
                if sim >= pol.threshold and (cos is None or sim > cos):
                    match, cos = slot, sim
        if match is None:
            slots.keep(i, p)
        else:
            _fold(slots, match, i, p, cos, exact, ctx)
        slots.seen = i + 1
    slots.keep_until(passages, len(passages))
    result = slots.slots
    if pol.mmr:
        result = mmr(result, ctx)
    return result


def _related(near_rows: list[int], near_cols: list[int], restated: set[tuple[int, int]],
             hashes: list[str | int]) -> dict[int, set[int]]:
    """Which earlier passages each one could duplicate: a cosine at the threshold, a restated table
    or the same hash. A passage with none is kept as it is (the pair loop would find nothing)."""
    related: dict[int, set[int]] = {}
    for j, i in zip(near_rows, near_cols):  # j < i: i may duplicate the earlier j
        related.setdefault(i, set()).add(j)
    for j, i in restated:
        related.setdefault(i, set()).add(j)
    if len(set(hashes)) == len(hashes):
        return related  # no two passages share a text (the common case): no Python step per passage
    first_of: dict[str | int, list[int]] = {}
    for i, h in enumerate(hashes):
        earlier = first_of.setdefault(h, [])
        if earlier:
            related.setdefault(i, set()).update(earlier)
        earlier.append(i)
    return related


class _Slots:
    """The kept passages in output order, and which input passage holds each slot."""

    __slots__ = ("kept", "slot_of", "slots", "seen")

    def __init__(self) -> None:
        self.kept: list[int] = []  # indexes into passages, in output order
        self.slot_of: dict[int, int] = {}  # index into passages -> its slot, for the passages in `kept`
        self.slots: list[Passage] = []
        self.seen = 0  # the passages before this index have been kept or folded

    def keep(self, i: int, p: Passage) -> None:
        self.slot_of[i] = len(self.kept)
        self.kept.append(i)
        self.slots.append(p)

    def keep_until(self, passages: list[Passage], end: int) -> None:
        """Keep passages[seen:end] as they are (none of them duplicates an earlier one), in one go."""
        start = self.seen
        if end > start:
            base = len(self.kept)
            self.slot_of.update(zip(range(start, end), range(base, base + end - start)))
            self.kept.extend(range(start, end))
            self.slots.extend(passages[start:end])
        self.seen = max(start, end)


def _fold(slots: _Slots, match: int, i: int, p: Passage, cos: float | None, exact: bool, ctx: Context) -> None:
    """Passage `i` duplicates the one in slot `match`: the higher authority keeps the slot (at the
    group's best rank), the other becomes its provenance; traced either way."""
    pol = ctx.policy.dedup
    holder = slots.slots[match]
    a_new, a_old = authority(p.first, ctx.policy.versions), authority(holder.first, ctx.policy.versions)
    # at one authority, a trusted copy wins over a stranger's (the official copy is the one kept)
    by_trust = a_new == a_old and holder.untrusted != p.untrusted
    how = ("same normalised text" if exact else f"cosine {cos:.3f} >= {pol.threshold}"
           if cos is not None and cos >= pol.threshold else "each of its values is stated there too: a copied table or list")
    if outranks(a_new, p.untrusted, a_old, holder.untrusted):
        winner = p.with_(
            score=max(p.score, holder.score), rank=min(p.rank, holder.rank),
            also_in=p.also_in + (_provenance(holder, cos),) + holder.also_in,
        )
        slots.slots[match] = winner
        del slots.slot_of[slots.kept[match]]
        slots.slot_of[i] = match
        slots.kept[match] = i
        ctx.trace.add(
            MOVE, "drop", [holder.first.id],
            f"duplicate of {p.first.id} ({how}); kept {p.first.id} "
            + ("as the trusted copy (the other is a stranger's)" if by_trust else f"for its higher authority ({a_new} > {a_old})")
            + f" at the group's best rank {winner.rank}",
            cosine=round(cos or 1.0, 4), kept=p.first.id,
        )
    else:
        slots.slots[match] = holder.with_(also_in=holder.also_in + (_provenance(p, cos),) + p.also_in)
        reason = f"duplicate of {holder.first.id} ({how})"
        reason += (f"; {holder.first.id} has higher authority ({a_old} > {a_new})" if a_old > a_new
                   else f"; {holder.first.id} is the trusted copy (the other is a stranger's)" if by_trust
                   else "; kept the better-ranked copy")
        ctx.trace.add(MOVE, "drop", [p.first.id], reason, cosine=round(cos or 1.0, 4), kept=holder.first.id)


def _restated_pairs(passages: list[Passage], ctx: Context, feats: list[Any]) -> set[tuple[int, int]]:
    """Pairs (j < i) of passages of different documents, similar enough to be compared for a
    conflict, where one only restates the values of the other (docket.claims.restates)."""
    if not ctx.has_vectors() or len(passages) < 2:
        return set()
    from docket.claims import different_subjects, subject
    from docket.claims.bounds import restate_gate
    from docket.claims.compare import COPY_MIN_STATEMENTS, COPY_OVERLAP, restates_read

    _, rows, cols = reach.similar_pairs(passages, ctx, ctx.policy.versions.conflict_similarity)
    if not rows:
        return set()

    subjects: dict[int, frozenset[str]] = {}

    def opens_with(k: int) -> frozenset[str]:
        # the subject of every claim of passage k: `restates` is False both ways when two differ
        if k not in subjects:
            f = feats[k]
            subjects[k] = f.subject(passages[k].first) if f is not None and len(passages[k].chunks) == 1 else \
                subject(passages[k].text)
        return subjects[k]

    reads = ClaimsReads(passages, feats, ctx)  # what `restates` reads of each, as a copy and as a source
    #: what `bounds.may_restate` reads of each sketch, as a copy (`restate_gate`) and as a source (its words)
    gates: dict[int, tuple[tuple[frozenset[str], float] | None, frozenset[str]]] = {}

    def gate_of(k: int) -> tuple[tuple[frozenset[str], float] | None, frozenset[str]]:
        sk = reads[k].sketch()
        got = gates[k] = (restate_gate(sk, COPY_OVERLAP, COPY_MIN_STATEMENTS), sk.words)
        return got

    docs = [p.doc for p in passages]
    out = set()
    for j, i in zip(rows, cols):
        if docs[i] == docs[j] or different_subjects(subjects.get(i) or opens_with(i), subjects.get(j) or opens_with(j)):
            continue
        vi, vj = reads[i], reads[j]
        if vi.passage is None or vj.passage is None:
            # `restates_read` bounds such a pair by the sketches first (`bounds.may_restate`): its first
            # tests, inline, rule out most pairs both ways (~90 % on the service path, issue 21) without
            # a call. Sound either way: a sketch bounds the claims, whichever sketch the read holds now
            (gi, wi), (gj, wj) = gates.get(i) or gate_of(i), gates.get(j) or gate_of(j)
            if (gi is None or len(gi[0] & wj) < gi[1]) and (gj is None or len(gj[0] & wi) < gj[1]):
                continue
        if restates_read(vi, vj) or restates_read(vj, vi):
            out.add((j, i))
    return out


def mmr(passages: list[Passage], ctx: Context) -> list[Passage]:
    """Maximal marginal relevance: lambda * relevance - (1 - lambda) * max similarity to the
    passages already picked. Relevance is the query cosine when vectors exist (same scale as
    the redundancy term); otherwise the input scores min-max normalised to [0, 1]."""
    pol = ctx.policy.dedup
    k = pol.mmr_k or len(passages)
    vecs = ctx.vectors([p.first for p in passages])
    if ctx.has_vectors():
        rel = vecs @ ctx.question_vector()
        scale = "cosine"
    else:
        s = np.array([p.score for p in passages], dtype=np.float64)
        span = float(s.max() - s.min())
        rel = (s - s.min()) / span if span > 0 else np.ones_like(s)
        scale = "min-max score"
    sim = ctx.similarities([p.first for p in passages])
    picked: list[int] = []
    pool = list(range(len(passages)))
    while pool and len(picked) < k:
        def gain(i: int) -> float:
            red = max((float(sim[i, j]) for j in picked), default=0.0)
            return pol.mmr_lambda * float(rel[i]) - (1 - pol.mmr_lambda) * red

        best = max(pool, key=lambda i: (gain(i), -i))
        picked.append(best)
        pool.remove(best)
    out = [passages[i].with_(rank=n) for n, i in enumerate(picked, 1)]
    if [passages[i].first.id for i in picked] != [p.first.id for p in passages[: len(picked)]]:
        ctx.trace.add(MOVE, "reorder", [passages[i].first.id for i in picked],
                      f"MMR (lambda {pol.mmr_lambda}, relevance as {scale}) changed the order")
    if pool:
        ctx.trace.add(MOVE, "drop", [passages[i].first.id for i in pool], f"MMR picks only {k} passages")
    return out
