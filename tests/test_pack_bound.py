"""The packer counts exactly only the passages a lower bound cannot rule out (docket.moves.pack,
docket.brief.sizer.words_at_least): the bound is never above the exact count, and packing decides
and traces exactly as when every passage is counted."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docket.brief import formats, sizer
from docket.brief.clean import sanitize
from docket.brief.render import SEP
from docket.brief.sizer import RenderSizer, rendered_cost, words_at_least
from docket.model import Passage, Trace
from docket.moves.pack import pack, wrapper_cost
from docket.policy import Policy
from docket.tokens import WordCounter

from helpers import context, mk, passages

# letters, digits, every kind of space and break the tokenizer or str.split treats specially, the
# characters the formats escape (and look-alikes), slashes, apostrophes, CJK and combining marks
ALPHABET = list("ab Z09/'.,;:|=<>&\"-_") + ["\n", "\r", "\t", "\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\u00a0",
                                          "\u2003", "\u2028", "\u3000", "\u200b", "\u00ad", "\ufeff", "é", "\u0301",
                                          "中", "文", "＜", "‹", "＝", "｜", "∶", "\u02c6", "🙂"]
texts = st.lists(st.sampled_from(ALPHABET), min_size=1, max_size=60).map("".join)


#: Unicode's White_Space property (PropList.txt; unchanged since Unicode 6.3): the tokenizer's \s
WHITE_SPACE = {*range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F, 0x205F,
               0x3000}


def _policy(fmt: str, spotlight: str) -> Policy:
    return Policy().updated(render={"format": fmt, "spotlight": spotlight})


@settings(max_examples=300, deadline=None)
@given(text=texts, title=texts, fmt=st.sampled_from(["xml", "lines"]), status=st.sampled_from(["current", "user-generated"]),
       spotlight=st.sampled_from(["datamark", "off"]), label=st.sampled_from(["S1", "S10", "S100", "S1000"]),
       words=st.booleans())
def test_the_bound_is_never_above_the_count(text: str, title: str, fmt: str, status: str, spotlight: str, label: str,
                                            words: bool) -> None:
    if not text.strip():
        text = "x" + text
    c = mk("c1", text=text, title=title, status=status)
    pol = _policy(fmt, spotlight)
    ctx = context([c], policy=pol)
    if words:
        ctx.counter = WordCounter()
    p = Passage.of_chunk(c, 1.0, 1)
    bound = words_at_least(p, pol.render) + ctx.tokens(SEP)
    assert bound <= rendered_cost(p, ctx, label)


def test_the_bound_is_zero_where_it_knows_nothing() -> None:
    forum = mk("f", text="many words of an outsider's post here", status="user-generated")
    p = Passage.of_chunk(forum, 1.0, 1)
    assert words_at_least(p, _policy("xml", "datamark").render) == 0  # datamarking joins the words
    assert words_at_least(p, _policy("xml", "off").render) > 0


def test_escaping_never_touches_a_space() -> None:
    """The bound counts the clean text's words: the formats escape inside words only."""
    xml, lines = formats.text_format("xml"), formats.text_format("lines")
    assert isinstance(xml, formats.XmlFormat) and isinstance(lines, formats.LinesFormat)
    for cp, out in xml._TEXT.items():
        assert not chr(cp).isspace() and not any(ch.isspace() for ch in out)
    assert not any(ch.isspace() for ch in lines._EQ + "\ua78a")
    assert set(sizer._FRAME_WORDS) == {formats.XmlFormat, formats.LinesFormat}


def test_str_split_spaces_are_the_tokenizers_but_four_that_sanitize_removes() -> None:
    """str.isspace is Unicode White_Space (the tokenizer's \\s) plus U+001C-U+001F."""
    split_only = {cp for cp in range(0x110000) if chr(cp).isspace()} - WHITE_SPACE
    assert split_only == {0x1C, 0x1D, 0x1E, 0x1F}
    assert sanitize("a\x1cb\x1dc\x1ed\x1fe")[0] == "abcde"


def _pool(n: int, seed: int = 7) -> list[Passage]:
    rnd = random.Random(seed)
    chunks = [mk(f"U{i}", doc=f"d{i}", title=f"Title {i}", text=" ".join(["word"] * rnd.randint(5, 120)) + ".")
              for i in range(n)]
    return passages(chunks, [1.0 - 0.001 * i for i in range(n)])


def _record(monkeypatch: pytest.MonkeyPatch, method: str, into: list[str]) -> Any:
    """Wrap `Costing.<method>` so each passage it sizes is noted in `into`; returns the original."""
    original = getattr(sizer.Costing, method)

    def recorded(self: sizer.Costing, p: Passage) -> int:
        into.append(p.first.id)
        return original(self, p)  # type: ignore[no-any-return]

    monkeypatch.setattr(sizer.Costing, method, recorded)
    return original


@pytest.mark.parametrize("held", [False, True])
@pytest.mark.parametrize("budget", [60, 400, 2000])
@pytest.mark.parametrize("compress", [True, False])
def test_pack_decides_and_traces_as_counting_every_passage(budget: int, compress: bool, held: bool,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """`held`: every chunk's word bound is known (as after the reachable set's scan), so the
    passages whose word bound is over the budget are skipped on it."""
    ps = _pool(80)
    pol = Policy().updated(pack={"budget": budget, "floor": 0.0}, compress={"enabled": compress})
    counted: list[str] = []
    _record(monkeypatch, "count", counted)
    lazy = context([p.first for p in ps], policy=pol)
    if held:
        for p in ps:
            lazy.features.features(p.first).words_bound(p.first)
    chosen, _ = pack(ps, lazy)
    lazily_counted = len(counted)
    bound = RenderSizer(lazy).bound_function("S80")
    bounds = {p.first.id: bound(p) for p in ps}  # (the pool's widest label)
    monkeypatch.setattr(RenderSizer, "bound_function", lambda self, label: lambda p: 0)  # no bound: all counted
    monkeypatch.setattr(RenderSizer, "bounds", lambda self, ps, label, cheap=False: [0] * len(ps))
    asked: list[str] = []
    size = _record(monkeypatch, "__call__", asked)
    eager = context([p.first for p in ps], policy=pol)
    chosen_eager, _ = pack(ps, eager)
    monkeypatch.setattr(sizer.Costing, "__call__", size)
    assert [p.ids for p in chosen] == [p.ids for p in chosen_eager]
    assert lazy.warnings == eager.warnings
    assert lazily_counted < len(ps) or budget >= 2000
    assert set(asked) == {p.first.id for p in ps}  # no bound (floor 0): the eager run sized every passage
    _same_but_bounds(lazy.trace.to_json(), eager.trace.to_json(), budget, bounds)


def _same_but_bounds(lazy: list[dict[str, Any]], eager: list[dict[str, Any]], budget: int,
                     at_least: dict[str, int]) -> None:
    """The lazy trace is the eager one but for the skips of passages ruled out on their bound
    (issue 21, prompt-equivalence): each names the same chunks and gives the passage's
    `at_least` (never above the count the eager run gave, and over what was left), not a count;
    every skip whose passage's `at_least` was over what was left is one of them."""
    assert len(lazy) == len(eager)
    for got, want in zip(lazy, eager):
        if got == want:
            if want["action"] == "skip" and want["move"] == "pack":  # counted: its bound was not over
                left = budget - (want["numbers"]["would_reach"] - want["numbers"]["tokens"])
                assert at_least[want["chunks"][0]] <= left
            continue
        assert (got["move"], got["action"], got["chunks"]) == ("pack", "skip", want["chunks"])
        low, exact = got["numbers"], want["numbers"]
        assert low == {"tokens_at_least": at_least[want["chunks"][0]],
                       "would_reach_at_least": exact["would_reach"] - exact["tokens"] + at_least[want["chunks"][0]]}
        assert low["tokens_at_least"] <= exact["tokens"] and low["would_reach_at_least"] > budget
        assert got["reason"] == (f"at least {low['tokens_at_least']} tokens: would reach at least "
                                 f"{low['would_reach_at_least']} > {budget}, skip")


def _warm(state: str, ps: list[Passage], pol: Policy) -> None:
    """Leave in the default feature cache what an earlier assembly may have left for `ps`."""
    ctx = context([p.first for p in ps], policy=pol)
    costing = RenderSizer(ctx).costing(f"S{len(ps)}")
    for p in ps:
        if state in ("held", "all"):
            ctx.features.features(p.first).words_bound(p.first)  # the reachable set's scan
        if state in ("words", "all"):
            costing.bounds([p])  # the clean words' bound
        if state in ("counted", "all"):
            costing(p)  # the exact count, as after an assembly that took or counted it


STATES = ["cold", "held", "words", "counted", "all"]


@pytest.mark.parametrize("budget", [60, 400, 1200])
@pytest.mark.parametrize("fmt", ["xml", "lines"])
def test_the_trace_reads_the_same_whatever_was_counted_before(budget: int, fmt: str,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Which passages are ruled out on their bound, and the bound each gives, do not depend on
    what the process counted or read before (the reverted round 10 gave the count where it was
    cached: the same ask on two identical stores traced differently). Packed from a cold cache,
    then after each kind of warm-up, then cold again: one trace, with both kinds of skip."""
    from docket.features import default_cache

    pol = Policy().updated(pack={"budget": budget, "floor": 0.0}, render={"format": fmt})
    traces = []
    for state in [*STATES, "cold"]:
        default_cache().clear()
        ps = _pool(80, seed=11)  # fresh chunk objects each time, as from a second store
        _warm(state, ps, pol)
        ctx = context([p.first for p in ps], policy=pol)
        chosen, _ = pack(ps, ctx)
        counted: list[str] = []
        original = _record(monkeypatch, "count", counted)
        traces.append((state, [p.ids for p in chosen], ctx.warnings, ctx.trace.to_json()))
        monkeypatch.setattr(sizer.Costing, "count", original)
        assert counted == []  # reading the trace renders and counts nothing
    first = traces[0]
    for t in traces[1:]:
        assert t[1:] == first[1:], t[0]
    skips = [e["numbers"] for e in first[3] if e["action"] == "skip"]
    assert any("tokens_at_least" in n for n in skips)
    assert budget < 1200 or any("tokens" in n for n in skips)  # counted skips too


def test_at_least_never_reads_a_cached_count() -> None:
    """`Costing.at_least` is the same number before and after the passage is counted or its
    chunk's word bound is read (it used to be the count once cached)."""
    from docket.features import default_cache

    default_cache().clear()
    ps = _pool(20, seed=2)
    ctx = context([p.first for p in ps])
    costing = RenderSizer(ctx).costing("S20")
    before = [costing.at_least(p) for p in ps]
    default_cache().clear()
    for p in ps:
        costing(p)
        ctx.features.features(p.first).words_bound(p.first)
    assert [costing.at_least(p) for p in ps] == before
    assert costing.bounds(ps) == before and all(b <= costing(p) for b, p in zip(before, ps))
    assert before != [costing(p) for p in ps]


@pytest.mark.parametrize("fmt", formats.text_formats())
def test_bounds_reads_what_at_least_gives_each_passage(fmt: str) -> None:
    """`Costing.bounds` (the whole list at once) gives each passage's `at_least`: counted, not yet
    counted, grown (two chunks) and compressed passages mixed, and again once some are counted."""
    ps = _pool(40, seed=3)
    grown = Passage(chunks=(ps[0].first, ps[1].first), score=0.5, rank=41, hits=(ps[0].first.id,))
    short = ps[2].with_(text_override="a shortened text")
    mixed = [*ps, grown, short]
    ctx = context([p.first for p in ps], policy=_policy(fmt, "off"))
    costing = RenderSizer(ctx).costing("S42")
    for p in ps[::3]:
        costing(p)  # counted: its exact count is cached with its features
    assert costing.bounds(ps) == [costing.at_least(p) for p in ps]
    assert costing.bounds(mixed) == [costing.at_least(p) for p in mixed]
    assert costing.bounds([]) == []


def test_nothing_fits_warns_with_the_smallest_exact_count() -> None:
    ps = _pool(30)
    ctx = context([p.first for p in ps], policy=Policy().updated(pack={"budget": 8, "floor": 0.0}))
    chosen, _ = pack(ps, ctx)
    smallest = min(RenderSizer(ctx).cost(p, "S30") for p in ps)
    assert chosen == []
    assert f"the smallest needs {smallest + wrapper_cost(ctx)} tokens" in ctx.warnings[0]


def test_a_deferred_event_is_made_when_read() -> None:
    made: list[int] = []

    def event() -> tuple[str, dict[str, int]]:
        made.append(1)
        return "12 tokens", {"tokens": 12}

    t = Trace()
    t.add("pack", "take", ["a"], "3 tokens", tokens=3)
    t.add_deferred("pack", "skip", ("b",), event)
    assert made == [] and len(t) == 2
    assert t.to_json()[1] == {"move": "pack", "action": "skip", "chunks": ["b"], "reason": "12 tokens",
                              "numbers": {"tokens": 12}}
    assert t.events[1].reason == "12 tokens" and made == [1]  # made once


@settings(max_examples=200, deadline=None)
@given(text=st.text(min_size=0, max_size=40))
def test_sanitize_drops_format_characters_as_a_per_character_test_does(text: str) -> None:
    import unicodedata

    from docket.brief import clean

    got, removed = sanitize.__wrapped__(text)
    t = text.replace("\r\n", "\n").replace("\r", "\n").replace("\u2028", "\n").replace("\u2029", "\n")
    t = clean._NONCHAR.sub("", clean._CONTROL.sub("", clean._INVISIBLE.sub("", t)))
    ref = "".join(ch for ch in t if unicodedata.category(ch) != "Cf")
    assert got == ref


def _words_less_slashed_reference(text: str) -> int:
    """words_at_least's count as the general path makes it: the clean text's words, less those opening with "/"."""
    clean = sanitize(text)[0].strip()
    return len(clean.split()) - len(sizer._SLASH_WORD.findall(clean))


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(alphabet=st.characters(max_codepoint=127), max_size=80),
                 st.lists(st.sampled_from([*"ab /x/y\n\r\t\x0b\x0c\x1c\x1f\x00\x7f", "\r\n", " /", "//", "a/b"]),
                          max_size=40).map("".join)))
def test_the_ascii_word_count_is_the_general_one(text: str) -> None:
    """The ASCII fast path of words_at_least (issue 21) counts what sanitize, strip and split count."""
    assert sizer._ascii_words_less_slashed(text) == _words_less_slashed_reference(text)


def test_deferred_events_added_many_at_once_read_as_one_by_one() -> None:
    made: list[str] = []

    def event(held: str) -> tuple[str, dict[str, int]]:
        made.append(held)
        return f"{held} skipped", {"tokens": len(held)}

    many, single = Trace(), Trace()
    many.add("pack", "take", ["a"], "3 tokens", tokens=3)
    many.add_deferred_many("pack", "skip", [("b",), ("c", "d")], event, ["bb", "ccc"])  # held values may be strings
    single.add("pack", "take", ["a"], "3 tokens", tokens=3)
    for chunks, held in [(("b",), "bb"), (("c", "d"), "ccc")]:
        single.add_deferred("pack", "skip", chunks, lambda h=held: event(h))  # type: ignore[misc]
    assert made == [] and len(many) == 3
    assert many.to_json() == single.to_json()
    assert many.to_json()[2] == {"move": "pack", "action": "skip", "chunks": ["c", "d"], "reason": "ccc skipped",
                                 "numbers": {"tokens": 3}}
    assert many.events[1].reason == "bb skipped" and made == ["bb", "ccc", "bb", "ccc"]  # each made once per trace


def test_cheap_bounds_read_the_held_word_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """With `cheap`, a passage whose count and words are not at hand but whose chunk's word bound
    is held gets that bound (plus the separator), never above its count, and its clean text's
    words are not read; without a held bound, or without `cheap`, every passage gets `at_least`."""
    from docket.features import default_cache  # (the helper's contexts share it: each starts from nothing)

    ps = _pool(40, seed=5)
    default_cache().clear()
    first = context([p.first for p in ps])
    plain = first.sizer.costing("S40").bounds(ps)  # type: ignore[attr-defined]
    default_cache().clear()
    fresh = context([p.first for p in ps])
    assert fresh.sizer.costing("S40").bounds(ps, True) == plain  # type: ignore[attr-defined]  # nothing held
    default_cache().clear()
    ctx = context([p.first for p in ps])
    costing = ctx.sizer.costing("S40")  # type: ignore[attr-defined]
    held = [ctx.features.features(p.first).words_bound(p.first) for p in ps[:30]]
    read: list[str] = []
    monkeypatch.setattr(sizer, "words_at_least", lambda p, pol: read.append(p.first.id) or words_at_least(p, pol))
    got = costing.bounds(ps, True)
    sep = costing.sep
    assert got[:30] == [h + sep for h in held]
    assert got[30:] == plain[30:]
    assert all(g <= costing(p) for g, p in zip(got, ps))
    assert got != plain  # the held bounds are below at_least here (the frame's words)
    assert sorted(read) == sorted(p.first.id for p in ps[30:])


def _varied(n: int, seed: int) -> list[Any]:
    """Chunks of varied length and words (no two alike: dedup keeps them all)."""
    rnd = random.Random(seed)
    vocab = [f"w{i}" for i in range(400)] + ["refund", "annual", "plan", "days", "/usr/bin", "a/b"]
    return [mk(f"V{i}", doc=f"d{i}", title=f"Doc {i}", text=" ".join(rnd.choice(vocab) for _ in range(rnd.randint(4, 150))))
            for i in range(n)]


@pytest.mark.parametrize("budget", [300, 1500])
def test_the_same_ask_on_two_identical_stores_briefs_alike(budget: int) -> None:
    """One process, two stores holding the same chunks (fresh objects each): the brief, trace
    included, is the same whether the caches are cold or hold what an earlier assembly (or a
    store's kept counts) left, in either order (tests/test_import.py's failure of round 10)."""
    from docket.assemble import assemble
    from docket.embed import HashEmbedder
    from docket.features import default_cache
    from docket.model import Candidate
    from docket.store.base import MemoryStore

    pol = Policy().updated(pack={"floor": 0.0})
    emb = HashEmbedder(64)

    def ask(chunks: list[Any]) -> dict[str, Any]:
        ranked = [Candidate(chunk=c, score=1.0 - 0.004 * i, rank=i + 1) for i, c in enumerate(chunks)]
        return assemble("how long is the refund window on an annual plan?", ranked, store=MemoryStore(chunks),
                        policy=pol, embedder=emb, budget=budget).to_json()  # type: ignore[no-any-return]

    def counted(chunks: list[Any]) -> None:  # every passage counted and every bound read, as a warm process has
        ps = passages(chunks)
        _warm("all", ps, Policy())

    default_cache().clear()
    cold = ask(_varied(120, 4))
    assert any("tokens_at_least" in e["numbers"] for e in cold["trace"] if e["action"] == "skip")
    assert ask(_varied(120, 4)) == cold  # warm from the first ask's chunks, fresh objects
    again = _varied(120, 4)
    counted(again)
    assert ask(again) == cold  # every count cached
    default_cache().clear()
    warm_first = _varied(120, 4)
    counted(warm_first)
    ahead = ask(warm_first)
    default_cache().clear()
    assert ask(_varied(120, 4)) == ahead == cold  # the reverse order: warm, then cold


@settings(max_examples=400, deadline=None)
@given(text=texts, status=st.sampled_from(["current", "user-generated"]), fmt=st.sampled_from(["xml", "lines"]),
       spotlight=st.sampled_from(["datamark", "off"]), held=st.booleans())
def test_at_least_is_the_larger_of_the_two_word_bounds(text: str, status: str, fmt: str, spotlight: str,
                                                       held: bool) -> None:
    """`at_least` of a whole chunk is the larger of its clean words' bound and (where it holds) the
    chunk's own word bound, plus the separator, whether that word bound is held or not: it skips
    computing the word bound where the text's spaces and newlines show it cannot be the larger."""
    from docket.features import FeatureCache, text_words_bound

    if not text.strip():
        text = "x" + text
    assert text_words_bound(text) <= text.count(" ") + text.count("\n") + 1
    c = mk("c1", text=text, status=status)
    pol = _policy(fmt, spotlight)
    ctx = context([c], policy=pol)
    ctx.features = FeatureCache()
    p = Passage.of_chunk(c, 1.0, 1)
    if held:
        ctx.features.features(c).words_bound(c)
    words = words_at_least(p, pol.render)
    hold = not (spotlight == "datamark" and p.untrusted)
    want = max(words, text_words_bound(text) if hold else 0) + ctx.tokens(SEP)
    costing = RenderSizer(ctx).costing("S1")
    assert costing.at_least(p) == want == costing.bounds([p])[0]
    assert costing.bounds([p], True)[0] <= want <= costing(p)
