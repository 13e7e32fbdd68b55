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
