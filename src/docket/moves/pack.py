"""Move 4: pack the budget with whole passages, best first, down to the score floor.

Each passage is counted as it will be rendered (header, tags, escaping, separator), so the
documents block never exceeds the budget. A passage that does not fit is skipped and smaller
ones are still tried; a passage the answer needs may be compressed (Move 6) when that is
switched on. Switched off (for ablations), packing degrades to the naive rule: stop at the
first passage that does not fit.
"""

from __future__ import annotations

from operator import attrgetter

from docket import sizing
from docket.context import Context
from docket.model import Passage
from docket.moves import compress as compress_move
from docket.moves.authority import authority_order
from docket.sizing import label_for

_RANK = attrgetter("rank")

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
    if ctx.policy.pack.untrusted_last:
        official = [p for p in ordered if not p.untrusted]
        strangers = [p for p in ordered if p.untrusted]
        worst_official = max((p.rank for p in official), default=0)
        moved = [p.first.id for p in strangers if p.rank < worst_official]
        ordered = official + strangers
        if moved:
            ctx.trace.add(MOVE, "reorder", moved, "untrusted sources are packed after every official one")
    return ordered


def pack(passages: list[Passage], ctx: Context) -> tuple[list[Passage], int]:
    budget = evidence_budget(ctx)
    pol = ctx.policy.pack
    ordered = packing_order(passages, ctx) if pol.enabled else sorted(passages, key=_RANK)
    widest = label_for(max(len(ordered), 1))
    costs = ctx.sizer.costs(ordered, widest)
    used = wrapper_cost(ctx)
    chosen: list[Passage] = []
    smallest: int | None = None
    add = ctx.trace.add_format
    for idx, p in enumerate(ordered):
        if p.score < pol.floor:
            rest = [q.first.id for q in ordered[idx:]]
            ctx.trace.add(MOVE, "stop", rest, f"score {p.score:.4f} < floor {pol.floor}", score=round(p.score, 4))
            break
        if pol.max_passages is not None and len(chosen) >= pol.max_passages:
            ctx.trace.add(MOVE, "stop", [q.first.id for q in ordered[idx:]], f"max_passages {pol.max_passages} reached")
            break
        cost = costs[idx]
        smallest = cost if smallest is None or cost < smallest else smallest
        if used + cost <= budget:
            used += cost
            chosen.append(p)
            add(MOVE, "take", p.ids, "{} tokens: take, {} of {} used", (cost, used, budget), tokens=cost, used=used)
            continue
        if ctx.policy.compress.enabled and idx < ctx.policy.compress.needed_top:
            small = compress_move.compress(p, budget - used, ctx, widest)
            if small is not None:
                c2 = passage_cost(small, ctx, widest)
                used += c2
                chosen.append(small)
                ctx.trace.add(MOVE, "take", list(small.ids), f"compressed to {c2} tokens: take, {used} of {budget} used",
                              tokens=c2, used=used)
                continue
        if not pol.enabled:
            rest = [q.first.id for q in ordered[idx:]]
            ctx.trace.add(MOVE, "stop", rest, f"{cost} tokens would reach {used + cost} > {budget}: stop (packing off)",
                          tokens=cost)
            break
        add(MOVE, "skip", p.ids, "{} tokens: would reach {} > {}, skip", (cost, used + cost, budget), tokens=cost,
            would_reach=used + cost)
    if not chosen and smallest is not None:
        ctx.warnings.append(f"the evidence budget {budget} is smaller than every passage (the smallest needs "
                            f"{smallest + wrapper_cost(ctx)} tokens with its fence); nothing was packed")
    return chosen, budget
