"""The brief layer's `Sizer` (docket.sizing): passages counted exactly as the brief renders them.

The wiring builds one per assembly context (`Context(sizer_factory=RenderSizer)`), so the moves
size passages through it and never import the brief. A passage that is one whole chunk is
rendered and counted once per chunk, render settings and label class (the count is kept with
the chunk's features); grown and compressed passages are rendered and counted each time.
"""

from __future__ import annotations

import operator
import re
import weakref
from collections.abc import Callable, Sequence
from itertools import repeat
from typing import TYPE_CHECKING, Any

from docket import counting
from docket.brief import formats, layout
from docket.brief.clean import sanitize
from docket.brief.render import CLOSE, OPEN, SEP, render_passage
from docket.features import FeatureCache
from docket.model import Chunk, Passage
from docket.policy import RenderPolicy
from docket.sizing import label_for
from docket.tokens import O200kCounter, WordCounter

if TYPE_CHECKING:
    from docket.context import Context

#: counters whose counts depend on the text alone, so a count may be cached per chunk
CACHEABLE_COUNTERS = (O200kCounter, WordCounter)


class RenderSizer:
    """`Sizer` over one assembly context: its policy's render settings, counter and feature cache."""

    __slots__ = ("ctx", "_costing")

    def __init__(self, ctx: Context) -> None:
        # the context holds its sizer: a weak reference back keeps the pair out of a reference
        # cycle, so an assembly's context, trace and passages are freed when the last reference
        # goes, not at the next garbage collection (that was ~1 ms a query at 200 candidates)
        self.ctx: Context = weakref.proxy(ctx)
        self._costing: dict[str, Costing] = {}

    def cost(self, passage: Passage, label: str) -> int:
        return self.costing(label)(passage)

    def costs(self, passages: Sequence[Passage], label: str) -> list[int]:
        return list(map(self.costing(label), passages))

    def cost_function(self, label: str) -> Callable[[Passage], int]:
        return self.costing(label)

    def costing(self, label: str) -> Costing:
        c = self._costing.get(label)
        if c is None:
            ctx = self.ctx
            c = self._costing[label] = Costing(ctx.counter, ctx.policy.render, ctx.render_key(), ctx.features, label)
        return c

    def at_least(self, passage: Passage, label: str) -> int:
        return self.costing(label).at_least(passage)

    def bound_function(self, label: str) -> Callable[[Passage], int]:
        return self.costing(label).at_least

    def bounds(self, passages: Sequence[Passage], label: str, cheap: bool = False) -> list[int]:
        return self.costing(label).bounds(passages, cheap)

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


class Costing:
    """`cost(·, label)` as a function that holds only what counting needs (the counter, the render
    settings and the feature cache, not the assembly context): a trace event may keep it to give
    a skipped passage's bound when the trace is read. A whole chunk's count is cached with its features,
    keyed by the counter, the render settings and the label's class, with counters whose counts
    are a function of the text alone (others are asked every time)."""

    __slots__ = ("counter", "policy", "features", "cache", "label", "key", "words_key", "bound_key", "cacheable", "sep",
                 "hold", "hold_untrusted")

    def __init__(self, counter: Any, policy: RenderPolicy, render_key: str, features: FeatureCache, label: str) -> None:
        self.counter, self.policy, self.label = counter, policy, label
        self.features, self.cache = features.features, features
        self.cacheable = type(counter) in CACHEABLE_COUNTERS
        self.key = ("cost", counter.name, render_key, counting.label_class(counter, label)) if self.cacheable else ()
        self.words_key = ("words", render_key)
        self.bound_key = ("bound", counter.name, render_key)  # `at_least` less the separator, once worked out
        self.sep = counting.count(counter, SEP)
        #: a chunk's own word bound (`ChunkFeatures.words_bound`) bounds its passage's count, of a
        #: trusted source / of an untrusted one: an o200k_base counter, in a format whose body keeps
        #: words whole (where `words_at_least` bounds by words too), and not datamarked (datamarking
        #: joins an untrusted passage's words; docket.moves.reach asks the same)
        self.hold = type(counter) is O200kCounter and type(formats.get(policy.format)) in _FRAME_WORDS
        self.hold_untrusted = self.hold and policy.spotlight != "datamark"

    def __call__(self, p: Passage) -> int:
        if not self.cacheable or len(p.chunks) != 1 or p.text_override is not None:
            return self.count(p)
        costs = self.features(p.first).costs
        c = costs.get(self.key)
        if c is None:
            c = costs[self.key] = self.count(p)
        return c

    def count(self, p: Passage) -> int:
        """Tokens of the passage rendered under the label plus the separator, counted now: whole,
        not in docket.counting's cached segments (a passage sized here is a chunk seen for the first
        time, or a grown one; its count is what gets cached, with the chunk's features), which
        costs ~3x more than counting a ~600-character block at once with toktok-rs."""
        return self.counter.count(render_passage(p, self.label, self.policy).block) + self.sep

    def at_least(self, p: Passage) -> int:
        """A lower bound on `self(p)` that renders and counts nothing, and a pure function of the
        passage and the render settings: never the cached count, whatever was counted before, so
        the packer's choice of which passages a bound rules out, and the bound its trace gives
        for each, read the same for the same inputs (issue 21, decision 1). `words_at_least` (kept
        with the chunk, for any label), or for a whole chunk whose own word bound
        (`ChunkFeatures.words_bound`) bounds its count (`hold`) the larger of the two, plus the
        separator; 0 with a counter it knows nothing of."""
        if not self.cacheable:
            return 0
        if len(p.chunks) != 1 or p.text_override is not None:
            return words_at_least(p, self.policy) + self.sep
        c = p.first
        f = self.features(c)
        costs = f.costs
        b = costs.get(self.bound_key)
        if b is not None:
            return b + self.sep  # type: ignore[no-any-return]
        b = costs.get(self.words_key)
        if b is None:
            b = costs[self.words_key] = words_at_least(p, self.policy)
        if self.hold_untrusted if p.untrusted else self.hold:
            h = f._words_bound
            if h is None:
                t = c.text
                # the chunk's word bound is at most its runs between spaces and newlines
                # (text_words_bound): where those are not more than b, it cannot be the larger and
                # is not computed (the packer's trace asks for the ~180 skips of a never-seen
                # service pool, ~7 us each)
                if t.count(" ") + t.count("\n") >= b:
                    h = f.words_bound(c)
            if h is not None and h > b:
                b = h
        costs[self.bound_key] = b
        return b + self.sep  # type: ignore[no-any-return]

    def bounds(self, passages: Sequence[Passage], cheap: bool = False) -> list[int]:
        """`at_least` of each passage (the packer reads one for every passage of a pool of
        hundreds, most of them beyond the budget: one call for the list).

        With `cheap`, each passage gets a lower bound of its `at_least` already at hand where
        there is one: its `at_least` itself, once worked out; else its clean words' bound
        (`words_at_least`); else, where the chunk's own word bound is kept
        (`ChunkFeatures.words_bound`, which the reachable set reads for every candidate of a large
        pool), that plus the separator: under o200k_base a lower bound of any rendering
        (docket.features.text_words_bound), read without the clean text's words (issue 21, first
        sight: ~1,000 passages a query at 1,000, most of them ruled out on it by the packer, which
        refines with `at_least` only where it is not over what is left). Where none is kept,
        `words_at_least` plus the separator (the chunk's word bound is not computed for it). The
        kept ones are read for the whole list by C-level look-ups."""
        if not self.cacheable:
            return [0] * len(passages)
        if not cheap:
            return list(map(self.at_least, passages))
        feats = self.cache.of_passages(passages)
        if None in feats:
            return list(map(self._words_only, passages))
        costs = list(map(_COSTS, feats))
        sep = self.sep
        got: list[int | None] = list(map(dict.get, costs, repeat(self.bound_key)))
        if None not in got:  # every `at_least` worked out before (a warm pool)
            return list(map(operator.add, got, repeat(sep)))  # type: ignore[arg-type]
        words: list[int | None] = list(map(dict.get, costs, repeat(self.words_key)))
        if self._words_hold(passages):
            held: list[int | None] = list(map(_WORDS_BOUND, feats))  # type: ignore[arg-type]
            return [b + sep if b is not None else w + sep if w is not None else h + sep if h is not None
                    else self._words_only(p) for b, w, h, p in zip(got, words, held, passages)]
        return [b + sep if b is not None else w + sep if w is not None else self._words_only(p)
                for b, w, p in zip(got, words, passages)]

    def _words_only(self, p: Passage) -> int:
        """`words_at_least(p)` plus the separator (kept with a whole chunk): at most `at_least(p)`."""
        if len(p.chunks) != 1 or p.text_override is not None:
            return words_at_least(p, self.policy) + self.sep
        costs = self.features(p.first).costs
        w = costs.get(self.words_key)
        if w is None:
            w = costs[self.words_key] = words_at_least(p, self.policy)
        return w + self.sep  # type: ignore[no-any-return]

    def _words_hold(self, passages: Sequence[Passage]) -> bool:
        """The chunks' word bounds are bounds of these passages' counts (`hold`, `hold_untrusted`)."""
        return self.hold_untrusted or (self.hold and not any(map(_UNTRUSTED, passages)))


_COSTS, _WORDS_BOUND = operator.attrgetter("costs"), operator.attrgetter("_words_bound")
_UNTRUSTED = operator.attrgetter("untrusted")

#: text formats whose body keeps every whitespace-separated word of the clean text whole (they
#: escape inside words, never a space: tests/test_pack.py checks their tables), with the words
#: their header and footer add at the least: `<document label="S1" …>` … `</document>`; `ID: S1 | …`
_FRAME_WORDS: dict[type, int] = {formats.XmlFormat: 3, formats.LinesFormat: 2}
#: a word that starts with "/": o200k_base may join it to the pre-token before it (see below)
_SLASH_WORD = re.compile(r"(?<!\S)/")


def words_at_least(p: Passage, policy: RenderPolicy) -> int:
    """A lower bound on the tokens of `p` rendered under any label (o200k_base or whitespace
    words), from its clean text's words alone: no header built, nothing tokenised. 0 when the
    format (or datamarking, which joins words) is not one it knows.

    Why it holds for o200k_base: the tokenizer merges bytes only inside a pre-token, so it gives
    at least one token per pre-token, and a pre-token never holds characters of two
    whitespace-separated words unless the second starts with "/" (of the pattern's alternatives
    only ` ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*` runs on past a newline, and only into "/"; the letter
    alternatives take at most one leading space, the others are digits or whitespace alone). Words
    are split as `str.split` does, on `str.isspace`, which is the tokenizer's `\\s` (Unicode
    White_Space) plus U+001C-U+001F, characters `sanitize` removes from text and header values."""
    fmt = formats.text_format(policy.format)
    frame = _FRAME_WORDS.get(type(fmt))
    if frame is None or (p.untrusted and policy.spotlight == "datamark" and fmt.datamarks):
        return 0
    raw = p.text
    if raw.isascii() and frame == 3:  # XmlFormat: the words of ASCII text counted in C, no copy of it split
        return _ascii_words_less_slashed(raw) + frame
    text = sanitize(p.text)[0].strip()
    n = len(text.split())
    if "/" in text:
        n -= len(_SLASH_WORD.findall(text))
    if type(fmt) is formats.LinesFormat:
        n += text.count("\n") + 1  # every line of the body starts "| "
    return n + frame


#: ASCII text classed byte by byte for `_ascii_words_less_slashed`: whitespace -> " ", "/" -> "/",
#: any other byte -> "x"; deleted: the control characters sanitize removes from ASCII text
_ASCII_CLASS = bytes(32 if chr(b).isspace() else 47 if b == 47 else 120 for b in range(256))
_ASCII_REMOVED = bytes(b for b in range(128) if chr(b) not in "\t\n\r" and (b < 32 or b == 127))


def _ascii_words_less_slashed(text: str) -> int:
    """For ASCII text: `len(sanitize(text)[0].split())` less the words that start with "/", the
    count `words_at_least` makes, without building the clean text or its words: after the
    characters sanitize removes are deleted, a counted word starts wherever a byte other than
    whitespace and "/" opens the text or follows whitespace (strip changes no count;
    tests/test_pack_bound.py checks it against the general path)."""
    b = text.encode("ascii").translate(_ASCII_CLASS, _ASCII_REMOVED)
    return b.count(b" x") + b.startswith(b"x")


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


__all__ = ["RenderSizer", "Costing", "CACHEABLE_COUNTERS", "rendered_cost", "words_at_least", "record_costs", "feature_record"]
