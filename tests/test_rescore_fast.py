"""The re-scoring is exactly the reference implementation (tests/rescore_reference.py, the code
before the vectorised path): the same order, the same rounded scores bit for bit, the same trace
events in the same order, the same signals and BM25 floats, on generated pools (repeated words,
accents, possessives, parenthetical titles, empty texts, untrusted chunks, tied and NaN scores,
numpy float32 scores, odd policies) and on real HotpotQA pools of 200 and 1,000 paragraphs."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rescore_reference as ref
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from docket import rescore
from docket.context import Context
from docket.features import FeatureCache
from docket.model import Candidate, parse_chunk
from docket.policy import Policy
from docket.tokens import WordCounter

WORDS = ["nimbus", "refund", "refunds", "plan", "annual", "the", "of", "and", "film", "1945", "kiss", "tell",
         "Kiss", "Akinoshū", "Akinoshu", "kenji's", "Kenji", "café", "cafe", "o'neil", "'s", "x", "a", "first",
         "Shirley", "Temple", "magazine", "Arthur's", "30", "days", "ÉCOLE", "straße", "42"]
SEPS = [" ", " ", " ", ", ", ". ", "-", "'", " (", ") ", "\n"]


@st.composite
def texts(draw: Any, max_words: int = 14) -> str:
    n = draw(st.integers(0, max_words))
    out = []
    for _ in range(n):
        out.append(draw(st.sampled_from(WORDS)))
        out.append(draw(st.sampled_from(SEPS)))
    return "".join(out).strip()


@st.composite
def titles(draw: Any) -> str:
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return ""
    t = draw(texts(max_words=3))
    if kind == 3:
        t = f"{t} ({draw(texts(max_words=2))})"
    return t


SCORES = st.one_of(
    st.sampled_from([0.5, 0.4, 0.4, 0.3, 0.0, 1.0, -0.2]),
    st.floats(-1, 1, allow_nan=False),
    st.floats(0, 1).map(np.float32),
    st.integers(-1, 2),
    st.just(float("nan")),
)


@st.composite
def pools(draw: Any) -> tuple[str, list[Candidate], Policy]:
    n = draw(st.integers(0, 14))
    mixed = draw(st.integers(0, 4))  # 0: one score type per pool, else any mix
    base = draw(SCORES)
    cands = []
    for i in range(n):
        text = draw(texts()) or draw(st.sampled_from(["-", "...", "' '"]))  # a chunk needs text; these have no words
        rec: dict[str, Any] = {"id": f"c{i}", "doc": f"d{i % 5}", "text": text, "title": draw(titles())}
        flag = draw(st.integers(0, 5))
        if flag == 1:
            rec["trust"] = "untrusted"
        elif flag == 2:
            rec["status"] = "user-generated"
        elif flag == 3:
            rec["trust"] = "trusted"
        score = draw(SCORES) if mixed else (type(base)(draw(st.floats(0, 1))) if not isinstance(base, int) else base)
        cands.append((rec, score))
    ranks = list(range(1, n + 1))
    how = draw(st.integers(0, 3))
    if how == 1:
        draw(st.randoms(use_true_random=False)).shuffle(ranks)
    elif how == 2:
        ranks = [draw(st.integers(1, 4)) for _ in ranks]
    out = [Candidate(parse_chunk(rec), s, r) for (rec, s), r in zip(cands, ranks)]
    question = draw(st.one_of(texts(), st.sampled_from([c.chunk.title for c in out] or [""]).map(
        lambda t: f"Which {t} was first?")))
    pol = Policy().updated(rescore={
        "title_weight": draw(st.sampled_from([0.0, 0.3, 1.0])),
        "lexical_weight": draw(st.sampled_from([0.0, 0.3, 0.7])),
        "link_weight": draw(st.sampled_from([0.0, 0.45, 2.0])),
        "link_top": draw(st.integers(0, 4)),
        "link_rounds": draw(st.integers(1, 4)),
    })
    return question, out, pol


def _ctx(question: str, pol: Policy, features: FeatureCache) -> Context:
    return Context(question=question, store=None, policy=pol, counter=WordCounter(), features=features)  # type: ignore[arg-type]


def _same(candidates: list[Candidate], question: str, pol: Policy, features: FeatureCache) -> None:
    want_ctx = _ctx(question, pol, FeatureCache())
    got_ctx = _ctx(question, pol, features)
    want = ref.rescore_order(candidates, want_ctx) if candidates else ([], [])
    got = rescore.rescore_order(candidates, got_ctx) if candidates else ([], [])
    assert got[0] == want[0]
    assert [repr(x) for x in got[1]] == [repr(x) for x in want[1]]  # bit for bit (NaN and -0.0 too)
    trace = [(e.move, e.action, e.chunks, e.reason, repr(e.numbers)) for e in got_ctx.trace.events]
    assert trace == [(e.move, e.action, e.chunks, e.reason, repr(e.numbers)) for e in want_ctx.trace.events]
    # signals(): the title and lexical signals the reference computes
    _, _, title, lexical = ref._signals(candidates, _ctx(question, pol, FeatureCache()))
    got_signals = rescore.signals(candidates, question)
    assert [repr((s["title"], s["lexical"], s["link"])) for s in got_signals] == \
        [repr((t, x, 0.0)) for t, x in zip(title, lexical)]


def _check_pool(pool: tuple[str, list[Candidate], Policy]) -> None:
    question, cands, pol = pool
    features = FeatureCache()
    _same(cands, question, pol, features)
    _same(cands, question, pol, features)  # warm: features already computed


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pools())
def test_generated_pools_decide_exactly_as_the_reference(pool: tuple[str, list[Candidate], Policy]) -> None:
    _check_pool(pool)


@pytest.mark.slow
@settings(max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pools())
def test_many_generated_pools_decide_exactly_as_the_reference(pool: tuple[str, list[Candidate], Policy]) -> None:
    _check_pool(pool)


@settings(max_examples=200, deadline=None)
@given(st.lists(texts(), max_size=12), texts())
def test_bm25_floats_are_the_reference(docs: list[str], query: str) -> None:
    from collections import Counter

    from docket.text import words

    terms = []
    for d in docs:
        tf = Counter(words(d))
        terms.append((frozenset(tf), {w: n for w, n in tf.items() if n > 1}, sum(tf.values())))
    assert [repr(x) for x in rescore.bm25_scores(query, docs)] == [repr(x) for x in ref._bm25(query, terms)]


def _hotpot(data: Path) -> tuple[list[str], list[Any]]:
    rows = [json.loads(line) for line in (data / "hotpotqa" / "dev250.jsonl").open(encoding="utf-8")]
    seen: dict[str, Any] = {}
    for r in rows:
        for c in r["contexts"]:
            if c["paragraph_text"] not in seen:
                seen[c["paragraph_text"]] = parse_chunk({"id": f"{r['question_id']}-{c['id']}", "doc": r["question_id"],
                                                         "title": c["title"], "text": c["paragraph_text"]})
    return [r["question_text"] for r in rows], list(seen.values())


@pytest.mark.parametrize("size", [200, 1000])
def test_real_hotpotqa_pools_decide_exactly_as_the_reference(shared_data: Path, size: int) -> None:
    questions, chunks = _hotpot(shared_data)
    rng = random.Random(size)
    features = FeatureCache()
    for qi, q in enumerate(questions[:: len(questions) // 12][:12]):
        pool = rng.sample(chunks, size)
        if qi % 3 == 1:  # some untrusted chunks among them
            pool = [c.model_copy(update={"trust": "untrusted"}) if rng.random() < 0.2 else c for c in pool]
        scores = sorted((round(rng.random(), 6) for _ in pool), reverse=True)
        if qi % 3 == 2:
            scores = [float(np.float32(s)) for s in scores]
        cands = [Candidate(c, s, r) for r, (c, s) in enumerate(zip(pool, scores), 1)]
        _same(cands, q, Policy(), features)


def test_a_full_vocabulary_restarts_and_rebuilds_stale_ids(shared_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past its capacity the word vocabulary starts afresh (bounded memory); chunks indexed with
    the old one are re-indexed on their next pool, and decisions do not change."""
    from docket import features

    questions, chunks = _hotpot(shared_data)
    monkeypatch.setattr(features, "VOCABULARY_CAPACITY", 500)
    rng = random.Random(7)
    cache = FeatureCache()
    seen = set()
    for q in questions[:4]:  # the same 150 chunks each time: after a restart every one is stale
        pool = rng.sample(chunks[:150], 150)
        cands = [Candidate(c, round(rng.random(), 6), r) for r, c in enumerate(pool, 1)]
        _same(cands, q, Policy(), cache)
        seen.add(id(features.current_vocabulary()))
    assert len(seen) > 1  # the vocabulary did restart


def test_threads_sharing_one_cache_decide_as_the_reference(shared_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Concurrent assemblies index words into one vocabulary (and restart it) at once: ids stay
    unique, so every thread's decisions are the reference's."""
    from concurrent.futures import ThreadPoolExecutor

    from docket import features

    questions, chunks = _hotpot(shared_data)
    monkeypatch.setattr(features, "VOCABULARY_CAPACITY", 3000)
    cache = FeatureCache()

    def job(seed: int) -> None:
        rng = random.Random(seed)
        for q in rng.sample(questions, 3):
            pool = rng.sample(chunks, 150)
            _same([Candidate(c, round(rng.random(), 6), r) for r, c in enumerate(pool, 1)], q, Policy(), cache)

    with ThreadPoolExecutor(4) as ex:
        list(ex.map(job, range(8)))
