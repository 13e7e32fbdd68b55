"""Move 4: pack the budget with whole passages, best first, down to the score floor.

Each passage is counted as it will be rendered (header, tags, escaping, separator), so the
documents block never exceeds the budget. A passage that does not fit is skipped and smaller
ones are still tried; a passage the answer needs may be compressed (Move 6) when that is
switched on. Switched off (for ablations), packing degrades to the naive rule: stop at the
first passage that does not fit.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from functools import partial
from itertools import compress, count, repeat
from typing import Any

from docket import sizing
from docket.context import Context
from docket.model import Passage
from docket.moves import compress as compress_move
from docket.moves.authority import authority_order
from docket.sizing import label_for

_RANK, _SCORE, _IDS = operator.attrgetter("rank"), operator.attrgetter("score"), operator.attrgetter("ids")
_UNTRUSTED = operator.attrgetter("untrusted")

MOVE = "pack"


def evidence_budget(ctx: Context) -> int:
    """The explicit budget, or the input target minus everything that is not evidence (the
    formula is docket.sizing's; the brief's fixed text is counted by the context's Sizer)."""
    pol = ctx.policy.pack
    got = sizing.evidence_budget(pol, 0 if pol.budget is not None else ctx.sizer.fixed_tokens())
    if got.derived:
        ctx.trace.add(MOVE, "budget", [], got.why, budget=got.tokens)
    return got.tokens


def passage_cost(p: Passage, ctx: Context, label: str) -> int:
    """Tokens this passage adds to the documents block, separator included (ctx.sizer.cost)."""
    return ctx.sizer.cost(p, label)


def wrapper_cost(ctx: Context) -> int:
    return ctx.sizer.wrapper_tokens()


def packing_order(passages: list[Passage], ctx: Context) -> list[Passage]:
    """Best first in authority order (docket.moves.authority: the policy before the help article
    among close scores, never a contradicted page before the source that outranks it); with
    `untrusted_last`, official sources go before strangers' posts, so the budget cuts the
    strangers first."""
    ordered, moved_up = authority_order(passages, ctx)
    if moved_up:
        ctx.trace.add(MOVE, "reorder", [p.first.id for p in ordered], "authority order: " + "; ".join(moved_up))
    if ctx.policy.pack.untrusted_last and True in map(_UNTRUSTED, ordered):  # none untrusted: nothing moves
        official = [p for p in ordered if not p.untrusted]
        strangers = [p for p in ordered if p.untrusted]
        worst_official = max((p.rank for p in official), default=0)
        moved = [p.first.id for p in strangers if p.rank < worst_official]
        ordered = official + strangers
        if moved:
            ctx.trace.add(MOVE, "reorder", moved, "untrusted sources are packed after every official one")
    return ordered


def pack(passages: list[Passage], ctx: Context) -> tuple[list[Passage], int]:
    """Whole passages best first into the budget, down to the floor. A passage is counted exactly
    only when a lower bound on its cost (`Sizer.at_least`: its words, no rendering) cannot rule
    it out, so a pool of hundreds is not rendered to fill a budget of ten. The skip of a passage
    ruled out on its bound gives that bound ("at least N tokens", `tokens_at_least`), never a
    count: no count of it could change the prompt (issue 21, decision 1: prompt-equivalence),
    and counting the ~180 such skips of a never-seen pool when the trace is read cost the service
    ~11 ms CPU a request. Which passages are ruled out on their bound, and the bound each gives,
    are pure functions of the passages and the settings (`Sizer.at_least` never reads a cached
    count), so the trace reads the same whatever the process counted before. The decisions are
    those of counting every passage (the bound is never above the count)."""
    budget = evidence_budget(ctx)
    pol = ctx.policy.pack
    ordered = packing_order(passages, ctx) if pol.enabled else sorted(passages, key=_RANK)
    widest = label_for(max(len(ordered), 1))
    sizer = ctx.sizer
    cost_of = sizer.cost_function(widest)
    refine = sizer.bound_function(widest)
    # a passage the compression move may shorten is counted exactly, as is the one that stops naive packing
    exact_first = ctx.policy.compress.needed_top if ctx.policy.compress.enabled else 0
    used = wrapper_cost(ctx)
    chosen: list[Passage] = []
    unsized: list[Passage] = []  # skipped on the bound: counted only if the warning below needs them
    smallest: int | None = None
    add, skips = ctx.trace.add_format, ctx.trace.add_deferred_many
    floor, most = ctx.floor, pol.max_passages
    n = len(ordered)
    bounded_from = min(exact_first, n) if pol.enabled else n  # where a lower bound may rule a passage out
    # where the floor stops the loop, and every bound before it read at once (most passages of a
    # large pool are ruled out on theirs): a run of passages ruled out on their bounds is logged in one step
    below = next(compress(count(), map(operator.lt, map(_SCORE, ordered), repeat(floor))), n)
    # (cheap: a bound at hand, at most `at_least`, refined to it below where it is not over what is left:
    # a passage is ruled out on its bound exactly when its `at_least` is over, whatever was at hand)
    bounds = ([0] * bounded_from + sizer.bounds(ordered[bounded_from:below], widest, cheap=True)
              if bounded_from < below else [])
    idx = 0
    while idx < n:
        p = ordered[idx]
        if idx == below:
            rest = [q.first.id for q in ordered[idx:]]
            ctx.trace.add(MOVE, "stop", rest, f"score {p.score:.4f} < floor {round(floor, 4)}", score=round(p.score, 4))
            break
        if most is not None and len(chosen) >= most:
            ctx.trace.add(MOVE, "stop", [q.first.id for q in ordered[idx:]], f"max_passages {most} reached")
            break
        if idx >= bounded_from and _over(bounds, idx, budget - used, refine, ordered):
            # this passage and the next ones whose bounds are over what is left, up to the floor
            # (`used` cannot change while passages are skipped): skipped, each giving its `at_least` when the
            # trace is read
            left = budget - used
            end = idx + 1
            while True:
                end = next(compress(count(end), map(operator.le, bounds[end:below], repeat(left))), below)
                if end == below or not _over(bounds, end, left, refine, ordered):
                    break
                end += 1
            run = ordered[idx:end]
            unsized.extend(run)
            skips(MOVE, "skip", list(map(_IDS, run)), partial(_skip_at, refine, used, budget), run)
            idx = end
            continue
        at, idx = idx, idx + 1  # p is ordered[at]: counted now
        cost = cost_of(p)
        smallest = cost if smallest is None or cost < smallest else smallest
        if used + cost <= budget:
            used += cost
            chosen.append(p)
            add(MOVE, "take", p.ids, "{} tokens: take, {} of {} used", (cost, used, budget), tokens=cost, used=used)
            continue
        if at < exact_first:
            small = compress_move.compress(p, budget - used, ctx, widest)
            if small is not None:
                c2 = passage_cost(small, ctx, widest)
                used += c2
                chosen.append(small)
                ctx.trace.add(MOVE, "take", list(small.ids), f"compressed to {c2} tokens: take, {used} of {budget} used",
                              tokens=c2, used=used)
                continue
        if not pol.enabled:
            rest = [q.first.id for q in ordered[at:]]
            ctx.trace.add(MOVE, "stop", rest, f"{cost} tokens would reach {used + cost} > {budget}: stop (packing off)",
                          tokens=cost)
            break
        add(MOVE, "skip", p.ids, "{} tokens: would reach {} > {}, skip", (cost, used + cost, budget), tokens=cost,
            would_reach=used + cost)
    if not chosen and (smallest is not None or unsized):
        smallest = min([cost_of(p) for p in unsized] + ([smallest] if smallest is not None else []))
        ctx.warnings.append(f"the evidence budget {budget} is smaller than every passage (the smallest needs "
                            f"{smallest + wrapper_cost(ctx)} tokens with its fence); nothing was packed")
    return chosen, budget


def _over(bounds: list[int], k: int, left: int, refine: Callable[[Passage], int], ordered: list[Passage]) -> bool:
    """The passage at k is ruled out on a bound: its bound is over `left`, refined first with
    `at_least` when a cheap one is not (the larger of two lower bounds is one; the decision is that
    of `at_least` alone, since a cheap bound over `left` means the count is too)."""
    b = bounds[k]
    if b > left:
        return True
    b = bounds[k] = max(b, refine(ordered[k]))
    return b > left


def _skip_at(bound: Callable[[Passage], int], used: int, budget: int, passage: Passage) -> tuple[str, dict[str, Any]]:
    """The trace event of a passage skipped on its lower bound (made when the trace is read): the
    bound, `at_least` (a pure function of the passage and the render settings), never its count."""
    n = bound(passage)
    reach = used + n
    return (f"at least {n} tokens: would reach at least {reach} > {budget}, skip",
            {"tokens_at_least": n, "would_reach_at_least": reach})
