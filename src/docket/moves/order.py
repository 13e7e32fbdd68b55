"""Move 5: put the strongest evidence where the model looks.

Best first by default; edge order (best first, second best last) as an option; chronological
order for questions about a sequence. Two rules beat any position rule: the passages of one
document stay together and in document order.
"""

from __future__ import annotations

from datetime import date as Date
from typing import TypeVar

from docket.context import Context
from docket.model import Passage

MOVE = "order"

T = TypeVar("T")


def edge_order(items: list[T]) -> list[T]:
    """Best at both ends, weakest in the middle: [1, 3, 5, …, 6, 4, 2] (rank 1 always first)."""
    front: list[T] = []
    back: list[T] = []
    for i, item in enumerate(items):
        (front if i % 2 == 0 else back).append(item)
    return front + back[::-1]


def _position(p: Passage) -> tuple[int, str]:
    pos = p.first.position
    return (pos if pos is not None else 0, p.first.id)


def arrange(passages: list[Passage], ctx: Context) -> list[Passage]:
    pol = ctx.policy.order
    before = [p.first.id for p in passages]
    if pol.group_documents:
        groups: dict[tuple[str, int], list[Passage]] = {}
        for p in sorted(passages, key=lambda p: p.rank):
            groups.setdefault((p.doc, p.version), []).append(p)
        units = [sorted(g, key=_position) for g in groups.values()]  # already best-group first
    else:
        units = [[p] for p in sorted(passages, key=lambda p: p.rank)]

    if pol.mode == "edges":
        units = edge_order(units)
    elif pol.mode == "chronological":
        units = sorted(units, key=lambda g: (g[0].first.date or Date.max, min(p.rank for p in g)))
    if pol.untrusted_last:
        # a stranger's post never takes the first slot, however well it matched the question
        units = [g for g in units if not any(p.untrusted for p in g)] + [g for g in units if any(p.untrusted for p in g)]
    result = [p for g in units for p in g]
    after = [p.first.id for p in result]
    by_rank = [p.first.id for p in sorted(passages, key=lambda p: p.rank)]
    if after != by_rank or after != before:
        why = {"best_first": "best first", "edges": "edge order (best first, second best last)",
               "chronological": "chronological order"}[pol.mode]
        if pol.group_documents:
            why += "; passages of one document together, in document order"
        if pol.untrusted_last:
            why += "; untrusted sources after official ones"
        ctx.trace.add(MOVE, "reorder", after, why, before=before)
    return result
