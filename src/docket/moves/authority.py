"""Authority order: the policy before the help article before the forum post, within reason.

Packing (Move 4) and the prompt order (Move 5) both start from this order, so the budget cuts
the weaker source first and the model reads the stronger one first. The rule, in two parts:

1. Among passages whose scores are close, the higher authority goes first. "Close" is
   `versions.authority_window`, in the scorer's units like the floor: the next passage is the
   most authoritative of those scoring within the window of the best remaining score (ties by
   rank). A help article far ahead of a marginal policy chunk keeps its place; one a hair ahead
   does not. 0 keeps rank order.
2. A passage that Move 1 found outranked by a conflicting one never goes before it, whatever
   the scores: the note "S1 outranks S3" must point forward, and at a tight budget the policy,
   not the page that contradicts it, is what fits.
"""

from __future__ import annotations

import operator
from operator import attrgetter

from docket.context import Context
from docket.model import Passage
from docket.moves.versions import authorities


def outrankers(passages: list[Passage], ctx: Context) -> dict[int, set[int]]:
    """passage index -> indexes of the passages that outrank it in a reported conflict."""
    if not any(c.get("kind") == "outranked" and "higher" in c for c in ctx.conflicts):
        return {}  # no passage is outranked: nothing to place (the common case), no index of the ids
    where = {cid: i for i, p in enumerate(passages) for cid in p.ids}
    out: dict[int, set[int]] = {}
    for c in ctx.conflicts:
        if c.get("kind") != "outranked" or "higher" not in c:
            continue
        lower = next((x for x in c["chunks"] if x != c["higher"]), None)
        hi, lo = where.get(c["higher"]), where.get(lower) if lower is not None else None
        if hi is not None and lo is not None and hi != lo:
            out.setdefault(lo, set()).add(hi)
    return out


def authority_order(passages: list[Passage], ctx: Context) -> tuple[list[Passage], list[str]]:
    """The passages in authority order (see the module docstring), and one line per passage
    that moved ahead of a better-ranked one (for the trace)."""
    pol = ctx.policy.versions
    ranks = list(map(_RANK, passages))
    # already in rank order (the pool as the moves keep it): the sort would give the same list
    ranked = list(passages) if all(map(operator.lt, ranks, ranks[1:])) else sorted(passages, key=_RANK_IDS)
    n = len(ranked)
    auth = authorities(list(map(_FIRST, ranked)), pol)
    scores = list(map(_SCORE, ranked))
    above = outrankers(ranked, ctx)
    if len(set(auth)) <= 1 and not above and all(map(operator.ge, scores, scores[1:])):
        # one authority level, no conflict, scores falling with the rank: the rule below picks the
        # best-ranked remaining passage every time (it has the best remaining score), i.e. rank order
        return ranked, []
    # The rule, one pick at a time: of the remaining passages within the window of the best
    # remaining score, the highest authority, then the best rank (the smallest index). Kept
    # linear in the pool: the best score is read off a list sorted by score, and each authority
    # level keeps its remaining passages in rank order, so its best-ranked one within the window
    # is found at (or near) the front of its list.
    taken = [False] * n
    by_score = sorted(range(n), key=lambda i: -scores[i])
    levels: dict[int, list[int]] = {}
    for i in range(n):
        levels.setdefault(auth[i], []).append(i)
    level_order = sorted(levels, reverse=True)
    fronts = dict.fromkeys(levels, 0)
    top = first = 0
    order: list[int] = []
    notes: list[str] = []
    for _ in range(n):
        while taken[by_score[top]]:
            top += 1
        best = scores[by_score[top]]
        cut = best - pol.authority_window
        pick = -1
        for level in level_order:
            members = levels[level]
            k = fronts[level]
            while k < len(members) and taken[members[k]]:
                k += 1
            fronts[level] = k
            while k < len(members) and (taken[members[k]] or scores[members[k]] < cut):
                k += 1
            if k < len(members):
                pick = members[k]
                break
        why = "window"
        seen = {pick}
        while True:  # an outranked passage waits for the passage that outranks it
            ahead = sorted(j for j in above.get(pick, ()) if not taken[j] and j not in seen)
            if not ahead:
                break
            pick = ahead[0]
            seen.add(pick)
            why = "conflict"
        while taken[first]:
            first += 1
        if pick != first:
            p, q = ranked[pick], ranked[first]
            if why == "conflict":
                notes.append(f"{p.first.id} ({_source(p)}, authority {auth[pick]}) before {q.first.id} "
                             f"({_source(q)}, authority {auth[first]}): it outranks a passage that contradicts it")
            else:
                notes.append(f"{p.first.id} ({_source(p)}, authority {auth[pick]}, score {p.score:.3f}) before "
                             f"{q.first.id} ({_source(q)}, authority {auth[first]}, score {q.score:.3f}): higher "
                             f"authority within {pol.authority_window} of the best remaining score {best:.3f}")
        order.append(pick)
        taken[pick] = True
    return [ranked[i] for i in order], notes


_RANK_IDS, _FIRST, _SCORE = attrgetter("rank", "ids"), attrgetter("first"), attrgetter("score")
_RANK = attrgetter("rank")


def _source(p: Passage) -> str:
    c = p.first
    return c.source_type or ("untrusted" if c.untrusted else "no source type")
