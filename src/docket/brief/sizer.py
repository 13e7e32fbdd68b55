"""The brief layer's `Sizer` (docket.sizing): passages counted exactly as the brief renders them.

The wiring builds one per assembly context (`Context(sizer_factory=RenderSizer)`), so the moves
size passages through it and never import the brief. A passage that is one whole chunk is
rendered and counted once per chunk, render settings and label class (the count is kept with
the chunk's features); grown and compressed passages are rendered and counted each time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from docket import counting
from docket.brief import formats, layout
from docket.brief.render import CLOSE, OPEN, SEP, render_passage
from docket.model import Chunk, Passage
from docket.sizing import label_for
from docket.tokens import O200kCounter, WordCounter

if TYPE_CHECKING:
    from docket.context import Context

#: counters whose counts depend on the text alone, so a count may be cached per chunk
CACHEABLE_COUNTERS = (O200kCounter, WordCounter)


class RenderSizer:
    """`Sizer` over one assembly context: its policy's render settings, counter and feature cache."""

    __slots__ = ("ctx",)

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def cost(self, passage: Passage, label: str) -> int:
        return self.cost_function(label)(passage)

    def costs(self, passages: Sequence[Passage], label: str) -> list[int]:
        ctx = self.ctx
        cost_of = self.cost_function(label)
        if type(ctx.counter) not in CACHEABLE_COUNTERS:
            return [cost_of(p) for p in passages]
        key = ("cost", ctx.counter.name, ctx.render_key(), counting.label_class(ctx.counter, label))
        out = []
        for p, f in zip(passages, ctx.features.of_passages(list(passages))):
            c = f.costs.get(key) if f is not None else None
            out.append(c if c is not None else cost_of(p))
        return out

    def cost_function(self, label: str) -> Callable[[Passage], int]:
        """`cost(·, label)` for many passages. The cached count is keyed by the counter, the render
        settings and the label's class; it is used only with counters whose counts are a function
        of the text alone (others are asked every time)."""
        ctx = self.ctx
        if type(ctx.counter) not in CACHEABLE_COUNTERS:
            return lambda p: rendered_cost(p, ctx, label)
        key = ("cost", ctx.counter.name, ctx.render_key(), counting.label_class(ctx.counter, label))
        features = ctx.features.features

        def cost(p: Passage) -> int:
            if len(p.chunks) != 1 or p.text_override is not None:
                return rendered_cost(p, ctx, label)
            costs = features(p.first).costs
            c = costs.get(key)
            if c is None:
                c = costs[key] = rendered_cost(p, ctx, label)
            return c

        return cost

    def wrapper_tokens(self) -> int:
        ctx = self.ctx
        fmt = ctx.policy.render.format
        return ctx.tokens(OPEN[fmt] + "\n") + ctx.tokens("\n" + CLOSE[fmt]) - ctx.tokens(SEP)

    def fixed_tokens(self) -> int:
        return layout.fixed_tokens(self.ctx)

    def block_tokens(self, passages: Sequence[Passage]) -> int:
        return layout.documents_tokens(list(passages), self.ctx)

    def documents(self, passages: Sequence[Passage]) -> str:
        pol = self.ctx.policy.render
        fmt = formats.text_format(pol.format)
        return fmt.documents([render_passage(p, label_for(i), pol).block for i, p in enumerate(passages, 1)])

    def question(self) -> str:
        return layout.question_text(self.ctx)


def rendered_cost(p: Passage, ctx: Context, label: str) -> int:
    """Tokens of the passage rendered under `label` plus the separator, counted now."""
    return ctx.tokens(render_passage(p, label, ctx.policy.render).block) + ctx.tokens(SEP)


def record_costs(chunk: Chunk, counter: Any) -> list[list[Any]]:
    """The token counts a store keeps with a chunk (docket.features.record_of's `costs`): the
    passage rendered with the default render settings in each text format, for labels of one to
    three digits (S1-S999: one count where docket.counting.label_class says they count alike)."""
    p = Passage.of_chunk(chunk, 0.0, 1)
    out: list[list[Any]] = []
    classes = _label_classes(counter)
    for ctx in _record_contexts(counter):
        cost = rendered_cost(p, ctx, "S1")
        out.extend([counter.name, ctx.render_key(), cls, cost] for cls in classes)
    return out


#: one assembly context per text format with the default render settings, per counter (a handful)
_contexts: dict[int, list[Context]] = {}


def _record_contexts(counter: Any) -> list[Context]:
    got = _contexts.get(id(counter))
    if got is None or got[0].counter is not counter:
        from docket.context import Context
        from docket.features import FeatureCache
        from docket.policy import Policy

        got = [Context(question="-", store=None, policy=Policy().updated(render={"format": name}),  # type: ignore[arg-type]
                       counter=counter, features=FeatureCache(capacity=2)) for name in formats.text_formats()]
        _contexts[id(counter)] = got
    return got


def _label_classes(counter: Any) -> tuple[Any, ...]:
    """The label classes one count stands for: S1-S999 for o200k_base (every 1-3 digit string is
    one token), else only "S1"."""
    classes = tuple(dict.fromkeys(counting.label_class(counter, lab) for lab in ("S1", "S10", "S100")))
    return classes if len(classes) == 3 else ("S1",)


def feature_record(chunk: Chunk, counter: Any = None) -> str:
    """`docket.features.record_of` with the rendered counts: what the wiring hands a store to
    persist next to each row (the store itself knows nothing of rendering)."""
    from docket.features import record_of

    return record_of(chunk, counter, costs=record_costs)


__all__ = ["RenderSizer", "CACHEABLE_COUNTERS", "rendered_cost", "record_costs", "feature_record"]
