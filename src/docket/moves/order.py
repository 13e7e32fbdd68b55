"""Move 5: put the strongest evidence where the model looks.

Best first by default, "best" in authority order (docket.moves.authority: among close scores
the higher authority first, a contradicted page after the source that outranks it); edge order
(best first, second best last) as an option; chronological order for questions about a
sequence. Two rules beat any position rule: the passages of one document stay together and in
document order, and a group takes the place of its best passage. Strangers' text (untrusted
passages) never takes a position of emphasis, the first slot or the last one (right before the
question): in best-first and chronological order they go after the official passages but before
the last one; in edge order, in the middle. Only with fewer than two official passages does a
stranger's passage take an end, and the trace says so.
"""

from __future__ import annotations

from datetime import date as Date
from typing import TypeVar

from docket.context import Context
from docket.model import Passage
from docket.moves.authority import authority_order

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


def _middle(units: list[list[Passage]], strangers: list[list[Passage]]) -> list[list[Passage]]:
    """Strangers' passages between the two halves of an edge order: never first, never last
    while at least two official units exist to hold the ends."""
    cut = (len(units) + 1) // 2
    return units[:cut] + strangers + units[cut:]


def _before_last(units: list[list[Passage]], strangers: list[list[Passage]]) -> list[list[Passage]]:
    """Strangers' passages after the official ones but before the last: never the slot right
    before the question while an official unit can hold it."""
    if len(units) < 2:
        return units + strangers
    return units[:-1] + strangers + units[-1:]


def group_by_document(ordered: list[Passage], window: float) -> tuple[list[list[Passage]], list[str]]:
    """The passages of one document version together, each group placed where its best passage
    stands in `ordered` (authority order). Inside a group, document order, except that a passage
    scoring more than `window` below the group's best never goes ahead of it: document order
    must not hand the group's first slot (often the prompt's first) to its weakest passage. Also
    one trace line per group where that happened."""
    groups: dict[tuple[str, int], list[Passage]] = {}
    for p in ordered:
        groups.setdefault((p.doc, p.version), []).append(p)
    units: list[list[Passage]] = []
    notes: list[str] = []
    for g in groups.values():  # in the order of their first member: the best one
        best = g[0]
        in_doc = sorted(g, key=_position)
        at = next(i for i, p in enumerate(in_doc) if p is best)
        weak = [p for p in in_doc[:at] if p.score < best.score - window]
        unit = in_doc
        if weak:
            ahead = [p for p in in_doc[:at] if not any(p is w for w in weak)]
            unit = ahead + [best] + sorted(weak + in_doc[at + 1:], key=_position)
        if weak:
            notes.append(f"{', '.join(f'{p.first.id} ({p.score:.2f})' for p in weak)} after {best.first.id} "
                         f"({best.score:.2f}), the best passage of {best.doc}: more than {window} below it, "
                         f"so document order does not put it first")
        units.append(unit)
    return units, notes


def arrange(passages: list[Passage], ctx: Context) -> list[Passage]:
    pol = ctx.policy.order
    before = [p.first.id for p in passages]
    ordered, moved_up = authority_order(passages, ctx)
    grouped: list[str] = []
    if pol.group_documents:
        units, grouped = group_by_document(ordered, ctx.policy.versions.authority_window)
    else:
        units = [[p] for p in ordered]

    def untrusted(g: list[Passage]) -> bool:
        return any(p.untrusted for p in g)

    strangers = [g for g in units if untrusted(g)]
    official = [g for g in units if not untrusted(g)]
    notes: list[str] = []
    if pol.mode == "edges":
        # the first and the last slot are where the model looks: never a stranger's text there
        units = _middle(edge_order(official), strangers) if strangers else edge_order(units)
        if strangers and len(official) < 2:
            notes.append(f"only {len(official)} official passage(s): a stranger's passage takes "
                         f"{'every slot' if not official else 'the last slot'}, there is no middle")
    else:
        if pol.mode == "chronological":
            units = sorted(units, key=lambda g: (g[0].first.date or Date.max, min(p.rank for p in g)))
        if pol.untrusted_last and strangers:
            # a stranger's post never takes the first slot, however well it matched the question,
            # nor the last, right before the question (the other position of emphasis)
            official = [g for g in units if not untrusted(g)]
            units = _before_last(official, [g for g in units if untrusted(g)])
            if len(official) < 2:
                notes.append(f"only {len(official)} official passage(s): a stranger's passage takes "
                             f"{'every slot' if not official else 'the last slot'}, there is no middle")
    result = [p for g in units for p in g]
    after = [p.first.id for p in result]
    by_rank = [p.first.id for p in sorted(passages, key=lambda p: p.rank)]
    if after != by_rank or after != before:
        why = {"best_first": "best first", "edges": "edge order (best first, second best last)",
               "chronological": "chronological order"}[pol.mode]
        if moved_up:
            why += "; " + "; ".join(moved_up)
        if pol.group_documents:
            why += "; passages of one document together, in document order"
            why += "".join(f"; {n}" for n in grouped)
        if pol.mode == "edges" and strangers:
            why += "; untrusted sources in the middle, never first or last"
        elif pol.untrusted_last and strangers and not notes:
            why += "; untrusted sources after official ones, before the last (never first or last)"
        elif pol.untrusted_last and strangers:
            why += "; untrusted sources after official ones"
        why += "".join(f"; {n}" for n in notes)
        ctx.trace.add(MOVE, "reorder", after, why, before=before)
    return result
