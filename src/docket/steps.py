"""The assembler's steps as data: one table, read by `assemble`, the ablations and the docs.

    1 versions -> 2 dedup -> 3 expand -> 4 pack (+ 6 compress on a needed misfit, or the summary
    of the rest) -> 5 order -> fit (the exact budget check of the rendered block)

Every step has one signature, `(run, ctx) -> None`: it reads `run.passages` and writes them back
(pack also sets `run.budget`). A step whose policy section is switched off is skipped, like
scikit-learn's "passthrough", and the trace names the step by its table name. The brief is built
after the last step (docket.brief.layout.build_brief only builds).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from docket.context import Context
from docket.model import Passage
from docket.moves import dedup, expand, order, pack, versions


@dataclass
class Run:
    """One assembly's state between steps."""

    passages: list[Passage]
    #: the evidence budget (set by pack: explicit, or derived from the input target)
    budget: int = 0
    #: writes the summary of what did not fit (compress.summary), when configured
    generator: Any = None
    #: what each step left, for a caller that wants to see the pipeline (name -> passage count)
    counts: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Step:
    name: str
    run: Callable[[Run, Context], None]
    #: the policy section whose `enabled` switches the step off (None: the step always runs)
    switch: str | None
    why: str


def _versions(run: Run, ctx: Context) -> None:
    run.passages = versions.resolve(run.passages, ctx)


def _dedup(run: Run, ctx: Context) -> None:
    run.passages = dedup.collapse(run.passages, ctx)


def _expand(run: Run, ctx: Context) -> None:
    run.passages = expand.restore(run.passages, ctx)


def _pack(run: Run, ctx: Context) -> None:
    if ctx.policy.compress.summary:  # Option C: the best whole, a summary of the rest (pack runs inside)
        from docket.llm.cache import CachedGenerator
        from docket.moves import summary

        gen = run.generator
        cached = gen if isinstance(gen, CachedGenerator) else CachedGenerator(gen)
        run.passages, run.budget = summary.pack_with_summary(run.passages, ctx, cached)
    else:
        run.passages, run.budget = pack.pack(run.passages, ctx)


def _order(run: Run, ctx: Context) -> None:
    run.passages = order.arrange(run.passages, ctx)


def fit(run: Run, ctx: Context) -> None:
    """The per-passage counts are exact up to label widths and the block's joins: count the
    documents block as the brief will write it and drop the weakest passage until it fits."""
    passages = run.passages
    sizer = ctx.sizer
    while len(passages) > 1 and sizer.block_tokens(passages) > run.budget:
        worst = max(passages, key=lambda p: (p.untrusted, p.rank))
        passages = [p for p in passages if p is not worst]
        ctx.trace.add("pack", "drop", list(worst.ids),
                      f"rendered block exceeded the budget {run.budget}; dropped the weakest passage")
    run.passages = passages


#: the steps in the spec's order (Move 6, compress, runs inside pack on a needed misfit)
STEPS: tuple[Step, ...] = (
    Step("versions", _versions, "versions", "one version per fact, the one in force; conflicts found"),
    Step("dedup", _dedup, "dedup", "one copy per passage, the highest authority's; the others as provenance"),
    Step("expand", _expand, "expand", "the top hits grow to their neighbours or section"),
    Step("pack", _pack, None, "whole passages into the budget, best first (the budget is a contract: always runs)"),
    Step("order", _order, "order", "the final order the model reads"),
    Step("fit", fit, None, "the rendered documents block checked against the budget"),
)

#: the screening before the moves (docket.assemble): floor, untrusted screen, re-scoring, answerability
SCREENS = ("rescore", "answerable")

#: the switches `Policy.with_moves_off` accepts (docket.policy.MOVE_NAMES) are exactly these screens,
#: the steps' switches, pack (its packing rule) and compress (inside pack): tests/test_layers.py checks it


def run_steps(run: Run, ctx: Context) -> Run:
    """Every step of STEPS in order; a step switched off in the policy passes the passages through.
    Stops early (no passages left after pack) so the caller answers "not found"."""
    for step in STEPS:
        if step.switch is not None and not getattr(ctx.policy, step.switch).enabled:
            continue
        step.run(run, ctx)
        run.counts[step.name] = len(run.passages)
        if step.name == "pack" and not run.passages:
            break
    return run


__all__ = ["STEPS", "SCREENS", "Step", "Run", "run_steps", "fit"]
