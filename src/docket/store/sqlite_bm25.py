"""BM25's k best rows over the SQLite index's in-memory postings, without scoring every posting.

At a million chunks a question's common words hold hundreds of thousands of postings, and
scoring each one (a gather of its row's length, the BM25 arithmetic, a scatter into a score per
row) is the keyword stage's whole cost. Most of those rows cannot reach the top k: a row that
holds only common words scores at most the sum of those words' upper bounds. So the terms are
taken highest bound first (the "essential" ones, usually the rare words), their partial scores
give a lower bound on the k-th best score, and once the remaining terms' bounds sum to less than
that, only rows holding an essential term can rank (MaxScore, Turtle & Flood 1995). Those rows
are then scored exactly as before: every term, in the caller's order, the same arithmetic on
the same values, so each score is the same float as scoring every posting, and the k best,
ties by rowid included, are the same rows in the same order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

K1, B = 1.2, 0.75

#: below this many postings in all the question's terms, every posting is scored: the pruned path's
#: extra passes cost about what they save near 100,000 postings (benchmarks/sqlite_bm25.py; a 100k
#: store's questions hold ~26,000 at p50, a 1M store's ~260,000). Tests pass `prune_from=0`.
PRUNE_MIN_POSTINGS = 150_000

#: relative margin on each term's upper bound: the float32 denominator of a real contribution can
#: round below the exact one by ~6e-8 of its value, so a bound is widened well past that
_BOUND_SLACK = 1e-6

#: a term's postings after the access and metadata filters, and its IDF
Term = tuple[np.ndarray, np.ndarray, float]


def contribution(idf: float, tf: np.ndarray, lens: np.ndarray, avg: float) -> np.ndarray:
    """The BM25 part of one term for postings of frequency `tf` in rows of length `lens`."""
    return idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * lens / avg))


def scores(terms: list[Term], lens: np.ndarray, avg: float, rows: int, k: int,
           prune_from: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(row positions that may rank, each one's BM25 score): every row with a positive score when
    nothing can be pruned, else the rows holding an essential term (a superset of the k best,
    boundary ties included). Scores are summed term by term in the order of `terms`.
    `prune_from`: the fewest postings worth pruning (default PRUNE_MIN_POSTINGS)."""
    least = PRUNE_MIN_POSTINGS if prune_from is None else prune_from
    found = _contenders(terms, lens, avg, rows, k, least)
    total = np.zeros(rows, dtype=np.float64)
    for i, (at, tf, idf) in enumerate(terms):
        if found is not None and i in found.done:  # an essential term: every posting already scored
            total[at] += found.done[i]
            continue
        if found is not None:
            keep = found.mask[at]
            at, tf = at[keep], tf[keep]
        # a row appears once in a term's postings, so a fancy-indexed add is exact
        total[at] += contribution(idf, tf, lens[at], avg)
    hit = np.flatnonzero(total > 0) if found is None else found.rows
    return hit, total[hit]


def _upper_bound(tf: np.ndarray, idf: float) -> float:
    """The most one posting of the term can add: a row's length only lowers a contribution, and
    tf / (tf + c) grows with tf."""
    if tf.shape[0] == 0:  # every posting filtered out by the metadata filter
        return 0.0
    most = float(tf.max())
    return idf * (K1 + 1) * most / (most + K1 * (1 - B)) * (1 + _BOUND_SLACK)


@dataclass
class Contenders:
    """The rows that can be among the k best (a mask and their positions) and each essential
    term's contributions, by the term's place in the caller's list (scored once, added in order)."""

    mask: np.ndarray
    rows: np.ndarray
    done: dict[int, np.ndarray]


def _contenders(terms: list[Term], lens: np.ndarray, avg: float, rows: int, k: int,
                least: int) -> Contenders | None:
    """The rows that can be among the k best, or None when pruning would not save work (few
    postings, one term, the essential terms holding a third of the postings or more)."""
    sizes = [at.shape[0] for at, _, _ in terms]
    everything = sum(sizes)
    if len(terms) < 2 or everything < least or k < 1:
        return None
    bounds = [_upper_bound(tf, idf) for _, tf, idf in terms]
    order = sorted(range(len(terms)), key=lambda i: (-bounds[i], sizes[i], i))
    # the k-th partial score is at most the essential terms' bounds summed, so fewer essential
    # terms than `first` can never stop the search: if those already hold a third of the postings, give up now
    first = next((j for j in range(1, len(order)) if math.fsum(bounds[o] for o in order[j:])
                  < math.fsum(bounds[o] for o in order[:j])), len(order))
    if 3 * sum(sizes[o] for o in order[:first]) > everything:
        return None
    partial = np.zeros(rows, dtype=np.float64)
    seen = np.zeros(rows, dtype=bool)
    touched: list[np.ndarray] = []  # the rows first seen in each essential term, so no sort to de-duplicate
    done: dict[int, np.ndarray] = {}
    count = scored = 0
    for j, i in enumerate(order[:-1]):
        at, tf, idf = terms[i]
        done[i] = contribution(idf, tf, lens[at], avg)
        partial[at] += done[i]
        new = at[~seen[at]]
        seen[new] = True
        touched.append(new)
        count += new.shape[0]
        scored += sizes[i]
        if 3 * scored > everything:  # the essential terms hold a third of the postings: too little to save
            return None
        if count < k or j + 1 < first:
            continue
        rest = math.fsum(bounds[o] for o in order[j + 1:])
        touched = [np.concatenate(touched)] if len(touched) > 1 else touched
        kth = float(np.partition(partial[touched[0]], count - k)[count - k])
        # partial sums differ from a row's full score by rounding only (~1e-16 of it); the margin
        # keeps a row outside every essential term strictly below the k-th
        if rest < kth * (1 - 1e-9):
            return Contenders(seen, touched[0], done)
    return None
