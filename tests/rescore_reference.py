"""The re-scoring of docket 2d0c129 (before the vectorised path), kept verbatim as the reference
tests/test_rescore_fast.py compares the live `docket.rescore` with: the same order, scores, trace
events and BM25 floats, bit for bit."""

# ruff: noqa
# mypy: ignore-errors
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from docket.context import Context
from docket.model import Candidate
from docket.text import content_words, phrase

MOVE = "rescore"
K1, B = 1.2, 0.75


def _bm25(query: str, docs: Sequence[tuple[Any, ...]], k1: float = K1, b: float = B) -> list[float]:
    """BM25 from each document's word set, repeated-word counts and length (its first three
    items, computed once per chunk). The same sums in the same order as the textbook loop over
    the query's words, so the same floats."""
    n = len(docs)
    if n == 0:
        return []
    avgdl = sum(d[2] for d in docs) / n or 1.0
    q = list(dict.fromkeys(content_words(query)))
    qset = frozenset(q)
    df = dict.fromkeys(q, 0)
    hits: list[Any] = []
    for d in docs:
        if qset.isdisjoint(d[0]):
            hits.append(None)
            continue
        common = qset & d[0]
        found = [w for w in q if w in common] if len(common) > 1 else list(common)
        hits.append(found)
        for w in found:
            df[w] += 1
    idf = {w: math.log(1 + (n - c + 0.5) / (c + 0.5)) for w, c in df.items() if c}
    out = [0.0] * n
    for i, found in enumerate(hits):
        if found is None:
            continue
        repeats, length = docs[i][1], docs[i][2]
        s = 0.0
        for w in found:
            f = repeats.get(w, 1)
            s += idf[w] * f * (k1 + 1) / (f + k1 * (1 - b + b * length / avgdl))
        out[i] = s
    return out


def _titles(terms: Sequence[Any], question: str) -> list[float]:
    """`title_match(title, question)` for every candidate, from its precomputed title terms."""
    qphrase = phrase(question)
    qwords = set(qphrase.split())
    out = []
    for t in terms:
        phrases, tw = t.title_phrases, t.title_words
        if not tw or tw.isdisjoint(qwords):  # no shared content word: neither a phrase nor a share
            out.append(0.0)
        elif any(p in qphrase for p in phrases):
            out.append(1.0)
        else:
            share = len(tw & qwords) / len(tw)
            out.append(share * share)
    return out


def _signals(candidates: Sequence[Candidate], ctx: Context) -> tuple[list[Any], list[Any], list[float], list[float]]:
    entries = ctx.features.entries([c.chunk for c in candidates])
    terms = [e.features.rescore_terms(c.chunk) for e, c in zip(entries, candidates)]
    bm = _bm25(ctx.question, terms)
    top_bm = max(bm, default=0.0)
    lexical = [(s / top_bm if top_bm > 0 else 0.0) for s in bm]
    return entries, terms, _titles(terms, ctx.question), lexical


def _order(values: Any, ranks: Any, fast: bool) -> list[int]:
    """Indexes by (-value, rank), ties in input order (a stable sort)."""
    if fast:
        return np.lexsort((ranks, -values)).tolist()  # type: ignore[no-any-return]
    return sorted(range(len(values)), key=lambda i: (-values[i], ranks[i]))


def rescore_order(candidates: Sequence[Candidate], ctx: Context) -> tuple[list[int], list[Any]]:
    """The re-ranking without building candidates: indexes into `candidates`, best first, and
    their new scores (rounded to 6 places) in that order. Logs each promotion."""
    pol = ctx.policy.rescore
    n = len(candidates)
    entries, terms, title, lexical = _signals(candidates, ctx)
    # untrusted text (forum posts, web pages) earns no bonus: its words are written by strangers,
    # and echoing the question's words is exactly what a planted passage does
    untrusted = [e.features.untrusted for e in entries]
    for i in range(n):
        if untrusted[i]:
            title[i] = lexical[i] = 0.0
    scores = [c.score for c in candidates]
    ranks = [c.rank for c in candidates]
    # float arithmetic on arrays is the same IEEE arithmetic as on Python floats; any other
    # score type (numpy float32, Decimal) keeps the element-wise Python path
    fast = all(type(s) is float or type(s) is int for s in scores) and all(type(r) is int for r in ranks)
    tw, lw, kw = pol.title_weight, pol.lexical_weight, pol.link_weight
    link = [0.0] * n
    if fast:
        sc, rk = np.asarray(scores, dtype=np.float64), np.asarray(ranks, dtype=np.int64)
        fast = not np.isnan(sc).any()
    if fast:
        first = sc + tw * np.asarray(title) + lw * np.asarray(lexical)
        new: Any = first
    else:
        rk = ranks  # type: ignore[assignment]
        first = [s + tw * t + lw * x for s, t, x in zip(scores, title, lexical)]  # type: ignore[assignment]
        new = list(first)
    # links: titles mentioned by the best passages. Each round re-reads the top after the last
    # round's links, so a chain question (song -> band -> city) is followed one hop per round.
    if kw > 0 and pol.link_top > 0:
        eligible = [i for i in range(n) if terms[i].title_phrases and not untrusted[i]]
        last_top: list[int] | None = None
        for _ in range(pol.link_rounds):
            top = _order(new, rk, fast)[: pol.link_top]
            if top == last_top:
                break  # the same linking passages: this round would find no new link
            last_top = top
            linking = [j for j in top if not untrusted[j]]
            if linking and eligible:
                hays = [entries[j].features.text_phrase(candidates[j].chunk) for j in linking]
                hay_words = frozenset().union(*(entries[j].features.text_words(candidates[j].chunk) for j in linking))
                in_top = set(top)
                for i in eligible:
                    if link[i] or i in in_top:
                        continue
                    t = terms[i]
                    if not hay_words.isdisjoint(t.probes) and any(p in h for h in hays for p in t.title_phrases):
                        link[i] = 1.0
            new = first + kw * np.asarray(link) if fast else [f + kw * x for f, x in zip(first, link)]
    order = _order(new, rk, fast)
    add = ctx.trace.add_format
    if fast:
        order_ix = np.asarray(order)
        out_scores = rounded(new[order_ix], 6)
        promoted = np.flatnonzero(np.arange(1, n + 1) < rk[order_ix]).tolist()
        at4 = rounded(new[order_ix[promoted]], 4) if promoted else []
    else:
        out_scores = [round(new[i], 6) for i in order]
        promoted = [r for r, i in enumerate(order) if r + 1 < ranks[i]]
        at4 = [round(new[order[r]], 4) for r in promoted]
    for r, s4 in zip(promoted, at4):
        i = order[r]
        c = candidates[i]
        add(MOVE, "promote", [c.chunk.id], _PROMOTE, (c.rank, r + 1, c.score, title[i], lexical[i], link[i]),
            score=s4, cosine=c.score)
    return order, out_scores


def rounded(values: Any, digits: int) -> list[float]:
    """`[round(float(v), digits) for v in values]` for a float64 array, vectorised: numpy's round
    (scale, round half to even, divide back) is Python's correctly rounded one except when the
    scaled value lies within a hair of a half; those few (and any huge or non-finite value) are
    rounded by Python. The division is IEEE-exact rounding of an integer, as Python's is."""
    scale = 10.0**digits
    y = values * scale
    out = (np.rint(y) / scale).tolist()
    with np.errstate(invalid="ignore"):
        near = np.abs(np.abs(y - np.floor(y)) - 0.5) < 1e-6
        wild = ~(np.abs(values) < 1e6)
    for i in np.flatnonzero(near | wild).tolist():
        out[i] = round(float(values[i]), digits)
    return out  # type: ignore[no-any-return]


_PROMOTE = "rank {} -> {}: cosine {:.3f} + title {:.2f}, lexical {:.2f}, link {:.2f}"
