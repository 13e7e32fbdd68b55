"""First sight on the service path (issue 21): the shortcuts Moves 1-2 take over the similar pairs
give what the pair-by-pair tests gave.

- `reach.applies` says no at once when no candidate is alone in its document: the scan it spares
  would have found no reachable set (the brief, trace included, is the scan's);
- Move 1 rules out pairs as arrays (`versions._to_compare`, `_Titles.different_mask`): the pairs
  the loop's own tests kept, in their order;
- Move 2 rules out restated pairs by `bounds.restate_gate` inline: False only where
  `bounds.may_restate` is False.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from docket.assemble import assemble
from docket.claims import compare as K
from docket.claims.bounds import may_restate, restate_gate, sketch
from docket.embed import HashEmbedder
from docket.model import Passage
from docket.moves import reach, versions
from docket.policy import Policy
from docket.store.base import MemoryStore
from docket.tokens import O200kCounter

from helpers import cands, mk

EMB = HashEmbedder(256)
COUNTER = O200kCounter()
TOPICS = ["parking", "meal", "hotel", "train"]
FILLER = "the staff handbook says this applies to every office and each team member who travels".split()


@st.composite
def grouped_pools(draw: Any) -> tuple[list[Any], int]:
    """Pools of 24-60 chunks in documents of two to four chunks each (no chunk alone in its document),
    near copies and conflicting values among them."""
    n = draw(st.integers(24, 60))
    sizes: list[int] = []
    while sum(sizes) < n:
        sizes.append(draw(st.integers(2, 4)))
    if sum(sizes) - n == 1 and sizes[-1] == 2:
        sizes[-1] = 3  # (never one chunk alone at the end)
    n = sum(sizes)
    docs = [f"d{k}" for k, s in enumerate(sizes) for _ in range(s)]
    chunks = []
    for i in range(n):
        topic = draw(st.sampled_from(TOPICS))
        own = " ".join(f"{w}{i}" for w in FILLER[: draw(st.integers(4, len(FILLER)))])
        text = f"The {topic} allowance is {draw(st.integers(1, 4))}0 EUR a day. {own}"
        chunks.append(mk(f"c{i:03d}", text=text, doc=docs[i], title=topic.title(), position=i))
    return chunks, draw(st.integers(40, 200))


@pytest.fixture()
def small_pools(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reach, "MIN_POOL", 24)  # the scan runs on pools this small (as tests/test_reach.py)


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(grouped_pools())
def test_without_a_lone_document_the_scan_finds_no_reachable_set(small_pools: None, pool: tuple[list[Any], int]) -> None:
    chunks, budget = pool
    kw = {"store": MemoryStore(chunks), "budget": budget, "floor": 0.0, "counter": COUNTER, "embedder": EMB}
    found: list[Any] = []
    real_compute, real_lone = reach._compute, reach._has_lone_document

    def compute(*a: Any) -> Any:
        got = real_compute(*a)
        found.append(got)
        return got

    reach._compute = compute  # type: ignore[assignment]
    try:
        quick = assemble("What is the parking allowance?", cands(chunks), **kw)
        assert found and all(f is None for f in found)
        assert not real_lone([c for c in chunks])
        reach._has_lone_document = lambda firsts: True  # type: ignore[assignment]  # the scan runs
        found.clear()
        scanned = assemble("What is the parking allowance?", cands(chunks), **kw)
    finally:
        reach._compute, reach._has_lone_document = real_compute, real_lone  # type: ignore[assignment]
    assert found and all(f is None for f in found), "the scan found a reachable set without a lone document"
    assert quick.to_json() == scanned.to_json()  # prompt and trace alike


def test_a_lone_document_lets_the_scan_run() -> None:
    many = [mk(f"c{i}", doc=f"d{i // 2}") for i in range(6)]
    assert not reach._has_lone_document(many)
    assert reach._has_lone_document([*many, mk("c9", doc="alone")])
    assert reach._has_lone_document([mk(f"c{i}", doc=f"d{i}") for i in range(3)])
    assert not reach._has_lone_document([mk(f"c{i}", doc="d") for i in range(3)])


TITLES = ["", "Parking", "Parking, Berlin", "2013 Awards", "2014 Awards", "Meals (2019 rule)", "Meals", "Hotel"]
BODIES = ["Parking is free on Sundays.", "The 2013 Awards were held in May.", "The 2014 Awards moved to June.",
          "Meals cost 40 EUR.", "Hotel rooms cost 90 EUR.", "A rule with no title in it.", "Parking in Berlin costs more."]


@st.composite
def titled_pools(draw: Any) -> tuple[list[Passage], list[int], list[int], list[int]]:
    n = draw(st.integers(2, 14))
    pool = []
    for i in range(n):
        title = draw(st.sampled_from(TITLES))
        text = " ".join(draw(st.lists(st.sampled_from(BODIES), min_size=1, max_size=3)))
        c = mk(f"c{i}", text=text, title=title, doc=f"d{draw(st.integers(0, n // 2))}")
        pool.append(Passage.of_chunk(c, 1.0 - i / 100, i + 1, untrusted=draw(st.booleans())))
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda p: p[0] < p[1]),
                          max_size=40))
    levels = [draw(st.sampled_from([10, 50, 90])) for _ in range(n)]
    return pool, [a for a, _ in pairs], [b for _, b in pairs], levels


@settings(max_examples=300, deadline=None)
@given(titled_pools(), st.sampled_from([0, 64]))
def test_the_pairs_ruled_out_as_arrays_are_those_the_loop_ruled_out(data: Any, array_pairs: int) -> None:
    """Both ways `_to_compare` works (arrays from ARRAY_PAIRS pairs on, one by one below)."""
    pool, rows, cols, levels = data
    saved = versions.ARRAY_PAIRS
    versions.ARRAY_PAIRS = array_pairs
    try:
        _check_pairs(pool, rows, cols, levels)
    finally:
        versions.ARRAY_PAIRS = saved


def _check_pairs(pool: list[Passage], rows: list[int], cols: list[int], levels: list[int]) -> None:
    auth = dict(enumerate(levels))
    want = []
    slow = versions._Titles(pool)
    for i, j in zip(rows, cols):  # the loop's tests, one pair at a time
        a, b = pool[i], pool[j]
        if a.doc == b.doc and a.untrusted == b.untrusted:  # a stranger's chunk under a trusted doc id is compared
            continue
        if a.untrusted and b.untrusted:  # two strangers: not worth a note
            continue
        if (a.untrusted and auth[i] > auth[j]) or (b.untrusted and auth[j] > auth[i]):
            continue  # a stranger above a trusted source (versions.authority caps it, so only made-up levels)
        if slow.different_subjects(i, j):
            continue
        want.append((i, j))
    got_rows, got_cols = versions._to_compare(pool, rows, cols, auth, versions._Titles(pool))
    assert list(zip(got_rows, got_cols)) == want
    titles = versions._Titles(pool)
    mask = titles.different_mask(np.asarray(rows, dtype=np.intp), np.asarray(cols, dtype=np.intp))
    assert mask.tolist() == [versions._Titles(pool).different_subjects(i, j) for i, j in zip(rows, cols)]


def test_the_title_mask_tells_series_and_named_titles_apart() -> None:
    texts = {"2013 Awards": "The 2013 Awards were held in May.", "2014 Awards": "Another ceremony in June.",
             "Parking": "Parking is free on Sundays.", "Hotel": "Hotel rooms cost 90 EUR.", "Meals": "No title here."}
    pool = [Passage.of_chunk(mk(f"c{i}", text=t, title=title, doc=f"d{i}"), 1.0, i + 1)
            for i, (title, t) in enumerate(texts.items())]
    rows, cols = np.array([0, 2, 2]), np.array([1, 3, 4])
    # one series (different subjects though one text does not name its title); two texts naming
    # their own titles; a text that does not name its title
    assert versions._Titles(pool).different_mask(rows, cols).tolist() == [True, True, False]
    assert versions._Titles(pool).different_mask(np.array([], dtype=np.intp), np.array([], dtype=np.intp)).size == 0


FACTS = ["The fee is 40 EUR a day", "The fee is 50 EUR a day", "Refunds are not available after 14 days",
         "Parking costs 5 EUR an hour in the centre", "The office opens at 9", "Staff may travel abroad",
         "It was founded in 1994", "The team has 12 members", "Meals are not covered"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(FACTS), max_size=5), st.lists(st.sampled_from(FACTS), max_size=5),
       st.sampled_from([0.3, 0.7, 1.0]), st.sampled_from([1, 2, 3]))
def test_the_restate_gate_rules_out_only_what_may_restate_rules_out(a: list[str], b: list[str], overlap: float,
                                                                    least: int) -> None:
    copy, source = sketch(". ".join(a)), sketch(". ".join(b))
    gate = restate_gate(copy, overlap, least)
    ruled_out = gate is None or len(gate[0] & source.words) < gate[1]
    if ruled_out:
        assert not may_restate(copy, source, overlap, least)
    if gate is None:
        assert len(copy.facts) < least


def test_the_restate_gate_with_the_products_numbers() -> None:
    copy = sketch("The fee is 40 EUR a day. Refunds are not available after 14 days.")
    gate = restate_gate(copy, K.COPY_OVERLAP, K.COPY_MIN_STATEMENTS)
    assert gate is not None and gate[0] == copy.fact_words
    assert restate_gate(sketch("Staff may travel abroad."), K.COPY_OVERLAP, K.COPY_MIN_STATEMENTS) is None
    assert len(gate[0] & sketch("Hotel rooms are large.").words) < gate[1]  # nothing shared: ruled out
    assert not len(gate[0] & copy.words) < gate[1]  # itself: not ruled out


def test_the_service_bodies_keep_their_briefs_with_the_scan_forced() -> None:
    """Four chunks a document, as benchmarks/service_load.first_sight_payloads sends them (at the
    product's MIN_POOL): the brief is the one the scan gives."""
    chunks = []
    for i in range(reach.MIN_POOL + 4):
        own = " ".join(f"{w}{i}" for w in FILLER)
        chunks.append(mk(f"c{i:03d}", text=f"The {TOPICS[i % 4]} allowance is {i % 5 + 1}0 EUR a day. {own}",
                         doc=f"d{i // 4}", title=TOPICS[i % 4].title(), position=i % 4))
    kw = {"store": MemoryStore(chunks), "budget": 300, "floor": 0.0, "counter": COUNTER, "embedder": EMB,
          "policy": Policy()}
    quick = assemble("What is the meal allowance?", cands(chunks), **kw)
    real = reach._has_lone_document
    reach._has_lone_document = lambda firsts: True  # type: ignore[assignment]
    try:
        scanned = assemble("What is the meal allowance?", cands(chunks), **kw)
    finally:
        reach._has_lone_document = real  # type: ignore[assignment]
    assert quick.to_json() == scanned.to_json()
