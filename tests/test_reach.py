"""The reachable set (docket.moves.reach) never changes a brief: on generated pools, the brief with
R x n comparisons equals the brief with every pair compared (issue 21, decisions 1 and 2)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from docket.assemble import assemble
from docket.embed import HashEmbedder
from docket.features import text_words_bound
from docket.moves import reach
from docket.policy import Policy
from docket.store.base import MemoryStore
from docket.tokens import O200kCounter

from helpers import cands, mk

EMB = HashEmbedder(256)


@pytest.fixture(autouse=True, scope="module")
def _small_pools() -> Iterator[None]:
    """The bound is sound at any size; the product skips pools under reach.MIN_POOL only because
    there it does not pay. The tests use small pools, so they lower it (for this module only)."""
    saved = reach.MIN_POOL
    reach.MIN_POOL = 24
    yield
    reach.MIN_POOL = saved
COUNTER = O200kCounter()
TOPICS = ["parking", "meal", "hotel", "train", "taxi", "phone"]
FILLER = ("the staff handbook says this applies to every office and each team member who travels for work "
          "unless a manager agrees otherwise in writing before the trip starts").split()


def _brief_fields(b: Any) -> dict[str, Any]:
    """What must not change: the prompt, the sources, the counts, the warnings, the labelled conflicts
    (a conflict between two passages beyond reach is never labelled: neither is in the prompt)."""
    j = b.to_json()
    j.pop("trace")
    j["conflicts"] = [c for c in j["conflicts"] if c.get("labels")]
    return j


def _both(question: str, chunks: list[Any], budget: int, policy: Policy | None = None,
          store_chunks: list[Any] | None = None) -> tuple[Any, Any]:
    store = MemoryStore(store_chunks or chunks)
    kw = {"store": store, "budget": budget, "floor": 0.0, "counter": COUNTER, "embedder": EMB, "policy": policy}
    fast = assemble(question, cands(chunks), **kw)
    real = reach.applies
    reach.applies = lambda *a: False  # type: ignore[assignment]
    try:
        full = assemble(question, cands(chunks), **kw)
    finally:
        reach.applies = real  # type: ignore[assignment]
    return fast, full


def _reach_event(brief: Any) -> dict[str, Any] | None:
    return next((e for e in brief.to_json()["trace"] if e.get("action") == "reach"), None)


@st.composite
def pools(draw: Any) -> tuple[list[Any], int, bool]:
    n = draw(st.integers(24, 72))
    mixed = draw(st.booleans())  # a policy copy deep in the pool: two authority levels
    chunks: list[Any] = []
    texts: list[str] = []
    for i in range(n):
        kind = draw(st.sampled_from(["fresh"] * 5 + ["copy", "near", "conflict"]))
        topic = draw(st.sampled_from(TOPICS))
        words = " ".join(f"{w}{i}" for w in FILLER[: draw(st.integers(6, len(FILLER)))])  # this chunk's own words
        if kind == "copy" and texts:
            text = draw(st.sampled_from(texts))
        elif kind == "near" and texts:
            text = draw(st.sampled_from(texts)) + " Noted."
        elif kind == "conflict" and texts:
            base = draw(st.sampled_from(texts))
            text = base.replace("0 EUR", "5 EUR", 1) if "0 EUR" in base else base.replace("5 EUR", "0 EUR", 1)
        else:
            text = f"The {topic} allowance is {draw(st.integers(1, 9))}0 EUR a day. {words}".strip()
        texts.append(text)
        doc = f"d{i}" if draw(st.integers(0, 5)) else f"d{max(i - 1, 0)}"  # now and then two chunks share a document
        source = "policy" if mixed and i > n // 2 and draw(st.booleans()) else None
        chunks.append(mk(f"c{i:03d}", text=text, doc=doc, title=topic.title(), source_type=source, position=i))
    budget = draw(st.integers(40, 200))
    return chunks, budget, mixed


#: how many generated pools actually had candidates beyond reach (the test must exercise the bound)
SEEN = {"beyond": 0, "runs": 0}


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(pools(), st.sampled_from(["default", "rescore", "loose", "section", "nodedup"]))
def test_the_reachable_set_changes_no_brief(pool: tuple[list[Any], int, bool], variant: str) -> None:
    chunks, budget, _mixed = pool
    policy = {
        "default": Policy(),
        "rescore": Policy().updated(rescore={"enabled": True}, pack={"floor": -1.0}),
        "loose": Policy().updated(versions={"conflict_similarity": 0.3, "conflict_overlap": 0.3}, dedup={"threshold": 0.6}),
        "section": Policy().updated(expand={"mode": "section", "top_n": 3}),
        "nodedup": Policy().updated(dedup={"enabled": False}),
    }[variant]
    fast, full = _both("What is the daily parking allowance?", chunks, budget, policy)
    assert _brief_fields(fast) == _brief_fields(full)
    SEEN["runs"] += 1
    if _reach_event(fast) is not None:
        SEEN["beyond"] += 1


def test_the_generated_pools_exercise_the_bound() -> None:
    """Run after the property (file order): some pools must have had candidates beyond reach."""
    if SEEN["runs"] == 0:
        pytest.skip("the property test did not run")
    assert SEEN["beyond"] >= 3, SEEN


def _pool(n: int, deep: dict[int, dict[str, Any]]) -> list[Any]:
    """n distinct allowance chunks, each its own document, with `deep` overriding some positions."""
    out = []
    for i in range(n):
        own = " ".join(f"{w}{i}" for w in FILLER[: 10 + i % 15])  # words of this chunk alone: not near the others
        kw: dict[str, Any] = {"text": f"Rule {i}: {own}.", "doc": f"d{i}", "title": f"Rule {i}"}
        kw.update(deep.get(i, {}))
        out.append(mk(f"c{i:03d}", **kw))
    return out


def test_a_conflict_between_a_reachable_passage_and_a_deep_one_is_still_found() -> None:
    first = "The parking allowance is 40 EUR a day for every employee on a business trip."
    deep = "The parking allowance is 50 EUR a day for every employee on a business trip."
    chunks = _pool(60, {0: {"text": first, "title": "Parking"}, 55: {"text": deep, "title": "Parking"}})
    fast, full = _both("What is the parking allowance?", chunks, 120)
    assert _brief_fields(fast) == _brief_fields(full)
    event = _reach_event(fast)
    assert event is not None and event["numbers"]["beyond"] > 0, "the pool must have candidates beyond reach"
    found = [c.to_json() for c in fast.conflicts]
    assert any(set(c["chunks"]) == {"c000", "c055"} for c in found), found


def test_an_exact_copy_deep_in_the_pool_is_folded_into_the_reachable_one() -> None:
    text = "The hotel allowance is 120 EUR a night in every city, breakfast included, taxes extra."
    chunks = _pool(60, {1: {"text": text, "title": "Hotel"}, 58: {"text": text, "title": "Hotel"}})
    fast, full = _both("What is the hotel allowance?", chunks, 120)
    assert _brief_fields(fast) == _brief_fields(full)
    assert _reach_event(fast) is not None
    src = fast.to_json()["sources"]
    also = [a["chunks"] for s in src.values() for a in s.get("also_in", [])]
    assert ["c058"] in also, src


def test_a_higher_authority_copy_deep_in_the_pool_still_wins_its_duplicate() -> None:
    """Two authority levels: pack's order is not rank order, so the whole pool is compared (the
    bound needs one level); the policy copy at rank 59 replaces the FAQ's at rank 2."""
    text = "The meal allowance is 35 EUR a day on a business trip, alcohol excluded."
    chunks = _pool(60, {1: {"text": text, "title": "Meals", "source_type": "faq"},
                        58: {"text": text, "title": "Meals", "source_type": "policy"}})
    fast, full = _both("What is the meal allowance?", chunks, 120)
    assert _brief_fields(fast) == _brief_fields(full)
    kept = [c for s in fast.to_json()["sources"].values() for c in s["chunks"]]
    assert "c058" in kept and "c001" not in kept, kept


def test_the_trace_says_once_how_many_pairs_were_not_compared() -> None:
    chunks = _pool(80, {})
    fast, _ = _both("What is the taxi allowance?", chunks, 100)
    events = [e for e in fast.to_json()["trace"] if e.get("action") == "reach"]
    assert len(events) == 1, events
    nums = events[0]["numbers"]
    u = nums["beyond"]
    assert nums["candidates"] == 80 and nums["reachable"] + u == 80
    assert nums["pairs_not_compared"] == u * (u - 1) // 2
    assert nums["pairs_compared"] + nums["pairs_not_compared"] == 80 * 79 // 2


def test_no_fast_path_where_the_order_argument_fails() -> None:
    chunks = _pool(40, {})
    for pol in (Policy().updated(compress={"enabled": True}), Policy().updated(dedup={"mmr": True}),
                Policy().updated(pack={"enabled": False})):
        fast, full = _both("What is the taxi allowance?", chunks, 100, pol)
        assert _reach_event(fast) is None
        assert _brief_fields(fast) == _brief_fields(full)


@given(st.text(max_size=80).filter(lambda t: t.strip()))
def test_the_lower_bound_never_exceeds_the_rendered_count(text: str) -> None:
    from docket.brief.render import render_passage
    from docket.model import Passage

    chunk = mk("x", text=text or "x")
    p = Passage.of_chunk(chunk, 1.0, 1)
    for label in ("S1", "S999"):
        assert text_words_bound(chunk.text) <= COUNTER.count(render_passage(p, label, Policy().render).block)


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=80).filter(lambda t: t.strip()), st.sampled_from(["xml", "lines"]),
       st.sampled_from([1000, 4321, 99999, 999999]))
def test_a_wider_label_counts_at_most_label_extra_more(text: str, fmt: str, n: int) -> None:
    """What the scan assumes of pools of a thousand and more (reach module doc, "Labels"): a
    passage counted under pack's label for n passages counts at least what it counts under S999,
    and at most `label_extra(n)` more."""
    from docket.brief.render import render_passage
    from docket.model import Passage

    p = Passage.of_chunk(mk("x", text=text, title=text[:20]), 1.0, 1)
    policy = Policy().updated(render={"format": fmt}).render
    base = COUNTER.count(render_passage(p, "S999", policy).block)
    for label in (f"S{n}", f"S{10 ** (len(str(n)) - 1)}"):  # n itself and the smallest label as wide
        wide = COUNTER.count(render_passage(p, label, policy).block)
        assert base <= wide <= base + reach.label_extra(n), (label, base, wide)
    assert reach.label_extra(999) == 0 and reach.label_extra(1000) == 1 and reach.label_extra(999_999) == 1


@pytest.mark.parametrize("n,copies", [(1000, 0), (1001, 1), (1003, 4)])
def test_a_pool_of_a_thousand_and_more_keeps_every_brief(n: int, copies: int) -> None:
    """From 1,000 candidates pack's label may be one digit wider than S999 or not, as duplicates
    beyond reach decide: the scan bounds both (module doc, "Labels"). Exact copies deep in the pool
    bring what pack sees below 1,000 or keep it above; budgets step through the boundaries."""
    deep = {n - 1 - k: {"text": f"Rule {k}: " + " ".join(f"{w}{k}" for w in FILLER[: 10 + k % 15]) + "."}
            for k in range(copies)}  # a copy of chunk k's text near the bottom of the pool
    chunks = _pool(n, deep)
    seen = 0
    for budget in range(40, 400, 23):
        fast, full = _both("What is the taxi allowance?", chunks, budget)
        assert _brief_fields(fast) == _brief_fields(full), budget
        seen += _reach_event(fast) is not None
    assert seen >= 10, seen  # the reachable set applied (the pool is past the old limit of 999)
