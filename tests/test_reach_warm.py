"""The warm path of the reachable-set scan (issue 21, take 3): each candidate's word bound is kept
with its chunk's features, a batch's near pairs are read either as lists or as whole-array
reductions, and the chunk-to-position maps are built only when a list other than the pool asks.
Each must give what the scan gave before: the reference scan's members, the same bounds."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reach_reference import check_every_scan
from test_reach import COUNTER, EMB, pools

from docket.assemble import assemble
from docket.features import FeatureCache, text_words_bound
from docket.moves import reach
from docket.policy import Policy
from docket.store.base import MemoryStore

from helpers import cands, mk

SEEN = {"lists": 0, "arrays": 0}


@pytest.fixture(autouse=True)
def _checked_scans(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every scan the assembler runs is run by the reference too, on the same inputs."""

    def seen(_members: list[int] | None) -> None:
        SEEN["arrays" if reach._FEW_NEAR == 0 else "lists"] += 1

    check_every_scan(monkeypatch, seen)
    yield


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])
@given(pools(), st.sampled_from([0, 8, 10**9]), st.sampled_from(["default", "loose"]))
def test_near_pairs_read_as_lists_or_arrays_find_the_reference_members(
        pool: tuple[list[Any], int, bool], few: int, variant: str) -> None:
    """_FEW_NEAR 0 reads every batch by reductions, 10**9 every batch as lists; the shipped value
    mixes them. The "loose" policy relates many candidates (many near pairs a member)."""
    chunks, budget, _ = pool
    policy = Policy() if variant == "default" else Policy().updated(versions={"conflict_similarity": 0.3},
                                                                    dedup={"threshold": 0.6})
    saved = reach._FEW_NEAR
    reach._FEW_NEAR = few
    try:
        assemble("What is the daily parking allowance?", cands(chunks), store=MemoryStore(chunks), budget=budget,
                 floor=0.0, counter=COUNTER, embedder=EMB, policy=policy)
    finally:
        reach._FEW_NEAR = saved


def test_both_readings_ran() -> None:
    """Run after the property (file order): both readings must have been compared."""
    assert SEEN["lists"] >= 3 and SEEN["arrays"] >= 3, SEEN


@given(st.text(max_size=120).filter(lambda t: t.strip()))
def test_the_kept_bound_is_the_text_bound(text: str) -> None:
    chunk = mk("x", text=text or "x")
    f = FeatureCache(8).features(chunk)
    assert f.words_bound(chunk) == text_words_bound(chunk.text)
    assert f._words_bound == text_words_bound(chunk.text)  # kept: read again without the text


def test_a_changed_text_gets_its_own_bound() -> None:
    """Features are keyed by content: a chunk whose text changed never reads the old bound."""
    cache = FeatureCache(8)
    a, b = mk("x", text="one two three"), mk("x", text="one two three four five")
    assert cache.features(a).words_bound(a) == 3
    assert cache.features(b).words_bound(b) == 5


def test_the_pool_maps_are_built_only_when_another_list_asks() -> None:
    chunks = [mk(f"c{i}", text=f"text {i}") for i in range(4)]
    import numpy as np

    r = reach.Reach(chunks, [0, 2], np.zeros((2, 4), dtype=np.float32))
    assert r._position is None and r._member is None
    assert r.is_pool(chunks) and r._position is None  # the pool itself: no map
    assert r.covers(chunks[1:3]) and r.position == {id(c): i for i, c in enumerate(chunks)}
    assert r.member == {id(chunks[0]): 0, id(chunks[2]): 1}
    assert not r.covers([mk("other", text="elsewhere")])
