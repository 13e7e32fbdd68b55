"""Re-scoring's first sight (issue 21, decision 3): a pool's never-seen chunks are only glanced at
(docket.features.glance: their lengths and the question's words, found in their folded texts),
and a chunk seen again gets its full index. Whatever each candidate's state (never seen, glanced
at before, indexed, indexed under an older vocabulary, with terms from a feature record, mixed
in one pool), re-scoring decides as the per-candidate formulas below do, float for float:
title_match, bm25_scores and title_match_strict, the definitions docket.rescore vectorises."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import numpy as np
import rescore_cases as rc
import test_rescore_fast as fast
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from docket import features, rescore
from docket.features import FeatureCache, glance, title_terms
from docket.model import Candidate, Chunk
from docket.policy import Policy
from docket.text import STOPWORDS, title_variants, words

from helpers import mk

# --- the reference: each candidate on its own, by the documented formulas -------------------------


def _title_text(chunk: Chunk) -> str:
    return f"{chunk.title} {chunk.text}" if chunk.title else chunk.text


def _order(values: list[Any], ranks: list[Any]) -> list[int]:
    return sorted(range(len(values)), key=lambda i: (-values[i], ranks[i]))


def reference(candidates: list[Candidate], question: str, pol: Policy) -> tuple[list[int], list[str]]:
    """The order and the rounded scores (as repr) re-scoring gives, computed the plain way."""
    p = pol.rescore
    chunks = [c.chunk for c in candidates]
    untrusted = [c.untrusted for c in chunks]
    bm = rescore.bm25_scores(question, [_title_text(c) for c in chunks])
    top = max(bm) if bm else 0.0
    lexical = [0.0 if u else (s / top if top > 0 else 0.0) for s, u in zip(bm, untrusted)]
    title = [0.0 if u else rescore.title_match(c.title, question) for c, u in zip(chunks, untrusted)]
    scores, ranks = [c.score for c in candidates], [c.rank for c in candidates]
    first = [s + p.title_weight * t + p.lexical_weight * x for s, t, x in zip(scores, title, lexical)]
    new, order = first, _order(first, ranks)
    link = [0.0] * len(chunks)
    linkable = [not u and bool(title_variants(c.title)) for c, u in zip(chunks, untrusted)]
    if p.link_weight > 0 and p.link_top > 0 and any(linkable):
        for _ in range(p.link_rounds):
            top_ = order[: p.link_top]
            linking = [j for j in top_ if not untrusted[j]]
            if not linking:
                break
            found = False
            for i, c in enumerate(chunks):
                if linkable[i] and not link[i] and i not in top_ and any(
                        rescore.title_match_strict(c.title, chunks[j].text) for j in linking):
                    link[i] = 1.0
                    found = True
            if not found:
                break
            new = [f + p.link_weight * x for f, x in zip(first, link)]
            order = _order(new, ranks)
    return order, [repr(round(new[i], 6)) for i in order]


def _decide(candidates: list[Candidate], question: str, pol: Policy, cache: FeatureCache) -> tuple[list[int], list[str]]:
    order, scores = rescore.rescore_order(candidates, rc.ctx(question, pol, cache)) if candidates else ([], [])
    return list(order), [repr(x) for x in scores]


def _plain(pool: tuple[str, list[Candidate], Policy]) -> tuple[str, list[Candidate], Policy]:
    """The pool with finite float scores (the reference sorts as Python does; NaN is the recorded tests')."""
    question, cands, pol = pool
    return question, [Candidate(c.chunk, float(np.nan_to_num(float(c.score))), c.rank) for c in cands], pol


# --- decisions: first sight, second sight, warm, mixed ---------------------------------------------


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fast.pools())
def test_first_second_and_warm_sight_decide_as_the_reference(pool: tuple[str, list[Candidate], Policy]) -> None:
    question, cands, pol = _plain(pool)
    want = reference(cands, question, pol)
    cache = FeatureCache()
    assert _decide(cands, question, pol, cache) == want  # first sight: glanced at
    assert _decide(cands, question, pol, cache) == want  # second: the full index built
    assert _decide(cands, question, pol, cache) == want  # warm


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fast.pools(), st.randoms(use_true_random=False), st.sampled_from(["glanced", "indexed", "record", "mixed"]))
def test_pools_mixing_seen_and_never_seen_chunks_decide_as_the_reference(
        pool: tuple[str, list[Candidate], Policy], rng: random.Random, state: str) -> None:
    """Some chunks met before (glanced at by another question's pool, indexed, or read with a
    feature record's terms), the others never: one pool, two paths, the reference's floats."""
    question, cands, pol = _plain(pool)
    cache = FeatureCache()
    before = [c for c in cands if rng.random() < 0.5]
    for c in before:
        kind = state if state != "mixed" else rng.choice(["glanced", "indexed", "record"])
        if kind == "record":
            cache.adopt(c.chunk, features.from_record(c.chunk, features.content_key(c.chunk),
                                                      features.record_of(c.chunk)))  # type: ignore[arg-type]
            continue
        for _ in range(1 if kind == "glanced" else 2):
            _decide([c, c], "other words entirely", pol, cache)
    assert _decide(cands, question, pol, cache) == reference(cands, question, pol)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fast.pools())
def test_glanced_chunks_under_a_restarted_vocabulary_decide_as_the_reference(
        pool: tuple[str, list[Candidate], Policy]) -> None:
    """A chunk glanced at, then indexed, then the vocabulary starts afresh: its stale index is
    rebuilt (it was seen), and a never-seen chunk beside it is still only glanced at."""
    question, cands, pol = _plain(pool)
    cache = FeatureCache()
    half = cands[: len(cands) // 2]
    _decide(half, question, pol, cache)
    _decide(half, question, pol, cache)
    old = features._vocabulary
    features._vocabulary = features.Vocabulary()
    try:
        assert _decide(cands, question, pol, cache) == reference(cands, question, pol)
    finally:
        features._vocabulary = old


def test_a_chunk_is_glanced_at_first_and_indexed_when_seen_again() -> None:
    chunks = [mk("a", "Kiss and Tell is a 1945 film starring Shirley Temple.", title="Kiss and Tell (1945 film)"),
              mk("b", "Shirley Temple's first film role.", title="Shirley Temple"),
              mk("c", "Nothing to see here.", trust="untrusted")]
    cands = [Candidate(c, 0.5 - 0.1 * i, i + 1) for i, c in enumerate(chunks)]
    cache = FeatureCache()
    question = "Which actress starred in Kiss and Tell?"
    first = _decide(cands, question, Policy(), cache)
    glanced = [cache.features(c)._rescore_index for c in chunks]
    assert all(r.vocab is None and r.body == b"" and r is not features.NO_INDEX for r in glanced)
    assert _decide(cands, question, Policy(), cache) == first == reference(cands, question, Policy())
    indexed = [cache.features(c)._rescore_index for c in chunks]
    assert all(r.vocab is features.current_vocabulary() and r.body for r in indexed)


# --- the glance itself ---------------------------------------------------------------------------

PIECES = ["the", "of", "Kenji", "kenji's", "Rock", "rock", "band", "'", "''", "don't", "o'neil", "O'Neil's", " ", "  ",
          ",", ".", "-", "\n", "(", ")", "1945 film", "Akinoshū", "e\u0301", "\u0301", "ﬁ", "𝔘", "\U0001f600", "中文",
          "Σ", "İ", "’", "\u00a0", "x", "s", "'s", "café", "CAFÉ", "straße", "\ud800", "_"]
TEXT = st.lists(st.sampled_from(PIECES), max_size=30).map("".join)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.one_of(TEXT, st.text(max_size=20)), st.one_of(TEXT, st.text(max_size=60)),
                          st.booleans()), max_size=10),
       st.lists(st.sampled_from(["kenji", "rock", "band", "akinoshu", "cafe", "strasse", "o'neil", "don't", "s", "x",
                                 "fi", "中文", "the", "1945"]), max_size=6, unique=True))
def test_glance_reads_what_the_words_of_each_text_say(rows: list[tuple[str, str, bool]], wanted: list[str]) -> None:
    chunks = [mk(f"c{i}", text.strip() or "x", title=title, trust="untrusted" if u else "trusted")
              for i, (title, text, u) in enumerate(rows)]
    pairs = [(features.ChunkFeatures(c, features.content_key(c)), c) for c in chunks]
    seen = glance(pairs, wanted)
    found = {(int(r), int(k)): int(n) for r, k, n in zip(seen.rows, seen.words, seen.counts)}
    for i, (c, r) in enumerate(zip(chunks, seen.indexes)):
        toks = words(_title_text(c))
        tf = Counter(toks)
        phrases, tw, _ = title_terms(c.title)
        width, length, untrusted, linkable = np.frombuffer(r.head, dtype=np.int32).tolist()
        assert (width, length, untrusted, linkable) == (0, len(toks), int(c.untrusted), int(bool(phrases) and not c.untrusted))
        assert (r.vocab, r.body, r.title_phrases, r.title_words) == (None, b"", phrases, tw)
        for k, w in enumerate(wanted):
            assert found.get((i, k), 0) == tf[w], (c, w)
    assert all(n > 0 for n in found.values())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.one_of(TEXT, st.text(max_size=20)), st.one_of(TEXT, st.text(max_size=60)),
                          st.booleans(), st.booleans()), max_size=10),
       st.lists(st.sampled_from(["kenji", "rock", "band", "akinoshu", "cafe", "o'neil", "s", "x", "fi", "1945"]),
                max_size=6, unique=True))
def test_a_glance_from_record_terms_reads_what_one_from_the_text_reads(rows: list[tuple[str, str, bool, bool]],
                                                                       wanted: list[str]) -> None:
    """A chunk read with its feature record (its words as a set and the repeats) is glanced at
    from those terms, beside chunks glanced at from their text: the same heads, title terms,
    probes and counts as glancing at every one from its text."""
    chunks = [mk(f"c{i}", text.strip() or "x", title=title, trust="untrusted" if u else "trusted")
              for i, (title, text, u, _) in enumerate(rows)]
    from_text = glance([(features.ChunkFeatures(c, features.content_key(c)), c) for c in chunks], wanted)
    mixed = []
    for c, (*_, recorded) in zip(chunks, rows):
        f = features.ChunkFeatures(c, features.content_key(c))
        if recorded:
            f = features.from_record(c, features.content_key(c), features.record_of(c))  # type: ignore[assignment]
            assert f is not None and f._rescore is not None
        mixed.append((f, c))
    got = glance(mixed, wanted)
    assert [r[1:] for r in got.indexes] == [r[1:] for r in from_text.indexes]
    assert got.probes == from_text.probes == [title_terms(c.title)[2] for c in chunks]

    def triples(g: Any) -> list[tuple[int, int, int]]:
        return sorted(zip(g.rows.tolist(), g.words.tolist(), g.counts.tolist()))

    assert triples(got) == triples(from_text)


def test_a_glance_from_record_terms_counts_repeats() -> None:
    c = mk("a", "Rock, rock and the band's rock.", title="Rock band")
    f = features.from_record(c, features.content_key(c), features.record_of(c))
    assert f is not None
    seen = glance([(f, c)], ["band", "rock", "absent"])
    assert sorted(zip(seen.rows.tolist(), seen.words.tolist(), seen.counts.tolist())) == [(0, 0, 2), (0, 1, 4)]


def test_glance_of_no_chunks_and_no_words() -> None:
    assert glance([], ["x"]).indexes == []
    c = mk("a", "x y", title="")
    seen = glance([(features.ChunkFeatures(c, features.content_key(c)), c)], [])
    assert len(seen.rows) == 0 and len(seen.indexes) == 1


def test_glance_marks_only_chunks_without_an_index() -> None:
    c = mk("a", "Rock band", title="Band")
    f = features.ChunkFeatures(c, features.content_key(c))
    built = f.rescore_index(c, features.current_vocabulary())
    glance([(f, c)], ["rock"])
    assert f._rescore_index is built


def test_stop_words_are_never_wanted() -> None:
    """Re-scoring asks the glance only for the question's content words (as BM25 reads them)."""
    assert not {"the", "of", "s"} - STOPWORDS
