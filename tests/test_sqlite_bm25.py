"""The pruned BM25 top-k (store.sqlite_bm25) against scoring every posting: the same rows, in the
same order, with the same float scores, ties at the k-th included."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from docket.store import sqlite_bm25 as bm25
from docket.store.sqlite_index import _top


def _every_posting(terms: list[bm25.Term], lens: np.ndarray, avg: float, rows: int) -> tuple[np.ndarray, np.ndarray]:
    total = np.zeros(rows, dtype=np.float64)
    for at, tf, idf in terms:
        total[at] += idf * tf * (bm25.K1 + 1) / (tf + bm25.K1 * (1 - bm25.B + bm25.B * lens[at] / avg))
    hit = np.flatnonzero(total > 0)
    return hit, total[hit]


def _ranked(hit: np.ndarray, scores: np.ndarray, rowids: np.ndarray, k: int) -> list[tuple[int, float]]:
    return [(int(hit[i]), float(scores[i])) for i in _top(scores, rowids[hit], k)]


@st.composite
def _postings(draw: st.DrawFn) -> tuple[list[bm25.Term], np.ndarray, float, int, int]:
    rows = draw(st.integers(2, 300))
    # few distinct lengths and frequencies, so equal scores (ties at the k-th) are common
    lens = np.asarray(draw(st.lists(st.sampled_from([1, 3, 7, 12, 40]), min_size=rows, max_size=rows)), dtype=np.float32)
    n_terms = draw(st.integers(1, 6))
    terms: list[bm25.Term] = []
    for _ in range(n_terms):
        share = draw(st.sampled_from([0.01, 0.05, 0.3, 0.9]))
        seed = draw(st.integers(0, 2**31))
        rng = np.random.default_rng(seed)
        at = np.flatnonzero(rng.random(rows) < share).astype(np.int64)
        if at.shape[0] == 0:
            continue
        rng.shuffle(at)  # appended postings are not in row order
        tf = rng.choice(np.asarray([1, 1, 2, 5], dtype=np.float32), size=at.shape[0])
        df = at.shape[0]
        terms.append((at, tf, float(np.log1p((rows - df + 0.5) / (df + 0.5)))))
    avg = max(1.0, float(lens.mean()))
    return terms, lens, avg, rows, draw(st.integers(1, 40))


@given(case=_postings())
@settings(max_examples=400, deadline=None)
def test_pruned_top_k_equals_every_posting(case: tuple[list[bm25.Term], np.ndarray, float, int, int]) -> None:
    terms, lens, avg, rows, k = case
    if not terms:
        return
    rowids = np.arange(rows, dtype=np.int64)[::-1] + 7  # ties break by rowid, not by position
    want = _ranked(*_every_posting(terms, lens, avg, rows), rowids, k)
    got = _ranked(*bm25.scores(terms, lens, avg, rows, k, prune_from=0), rowids, k)
    assert got == want


def test_pruning_happens_when_a_rare_term_decides() -> None:
    """One rare term and one in most rows: only the rare term's rows are scored."""
    rows = 50_000
    lens = np.full(rows, 10, dtype=np.float32)
    common = np.arange(0, rows, dtype=np.int64)
    rare = np.arange(0, rows, 997, dtype=np.int64)
    terms: list[bm25.Term] = [(common, np.ones(rows, dtype=np.float32), float(np.log1p(0.5 / (rows + 0.5)) + 1e-3)),
                              (rare, np.ones(rare.shape[0], dtype=np.float32), float(np.log1p((rows - 51 + 0.5) / 51.5)))]
    hit, scores = bm25.scores(terms, lens, 10.0, rows, 10, prune_from=0)
    assert hit.tolist() == rare.tolist()
    full_hit, full = _every_posting(terms, lens, 10.0, rows)
    assert _ranked(hit, scores, np.arange(rows), 10) == _ranked(full_hit, full, np.arange(rows), 10)


def test_no_pruning_below_the_size_or_with_one_term() -> None:
    lens = np.ones(5, dtype=np.float32)
    one: list[bm25.Term] = [(np.arange(5), np.ones(5, dtype=np.float32), 0.5)]
    assert bm25._contenders(one, lens, 1.0, 5, 3, 0) is None
    two = one + [(np.arange(2), np.ones(2, dtype=np.float32), 1.0)]
    assert bm25._contenders(two, lens, 1.0, 5, 3, bm25.PRUNE_MIN_POSTINGS) is None  # 7 postings


@given(values=st.lists(st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.25, 3.0, 7.5]), min_size=2, max_size=400),
       noise=st.booleans(), k=st.integers(1, 60), seed=st.integers(0, 2**31))
@settings(max_examples=300, deadline=None)
def test_kth_through_a_sample_equals_a_full_partition(values: list[float], noise: bool, k: int, seed: int) -> None:
    """`_kth` narrowed by a sample (from 16 scores on here) gives the full partition's value,
    ties at the k-th included; `_top` with `rows` orders as with the keys gathered first."""
    from docket.store import sqlite_index

    scores = np.asarray(values, dtype=np.float64)
    if noise:
        scores = scores + np.random.default_rng(seed).random(scores.shape[0])
    k = min(k, scores.shape[0] - 1)
    want = np.partition(scores, scores.shape[0] - k)[scores.shape[0] - k]
    old = sqlite_index._KTH_SAMPLE_FROM
    sqlite_index._KTH_SAMPLE_FROM = 16
    try:
        assert sqlite_index._kth(scores, k) == want
        rows = np.random.default_rng(seed).permutation(scores.shape[0] + 5)[: scores.shape[0]]
        keys = np.arange(scores.shape[0] + 5, dtype=np.int64)[::-1]
        assert _top(scores, keys, k, rows=rows).tolist() == _top(scores, keys[rows], k).tolist()
    finally:
        sqlite_index._KTH_SAMPLE_FROM = old


def test_kth_of_many_scores_takes_the_sampled_path() -> None:
    from docket.store import sqlite_index

    rng = np.random.default_rng(3)
    for n, k in ((5000, 100), (20000, 100), (20000, 1), (9000, 50)):
        scores = np.round(rng.random(n) * 50) / 7  # many ties
        assert sqlite_index._kth(scores, k) == np.partition(scores, n - k)[n - k]
