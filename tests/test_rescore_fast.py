"""The re-scoring decides exactly as recorded (tests/rescore_cases.py; recorded from the code
before the vectorised path was last changed, by tests/fixtures/record_rescore.py): the same
order, the same rounded scores bit for bit, the same trace events in the same order, the same
signals, on generated pools (repeated words, accents, possessives, parenthetical titles, empty
texts, untrusted chunks, tied and NaN scores, numpy float32 scores, odd policies) and on real
HotpotQA pools of 200 and 1,000 paragraphs. Warm caches, a restarted vocabulary and threads
sharing one cache decide as a cold run does; BM25 floats are checked against the formula."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rescore_cases as rc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from docket import rescore
from docket.features import FeatureCache
from docket.model import Candidate, parse_chunk
from docket.policy import Policy

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


def _same(candidates: list[Candidate], question: str, pol: Policy, features: FeatureCache,
          want: dict[str, Any] | None = None) -> None:
    """The decision with `features` (warm, shared, restarted ...) equals `want`, or a cold run's."""
    if want is None:
        want = rc.decide(candidates, question, pol, FeatureCache())
    got = rc.decide(candidates, question, pol, features)
    hint = f" (if intended, re-record with {rc.RERECORD} and say why in the commit message)"
    for key in ("order", "scores", "trace", "signals"):
        assert got[key] == want[key], f"{key} differs{hint}"


def _check_pool(pool: tuple[str, list[Candidate], Policy]) -> None:
    question, cands, pol = pool
    features = FeatureCache()
    _same(cands, question, pol, features)
    _same(cands, question, pol, features)  # warm: features already computed


RECORD = rc.load() if rc.FIXTURE.exists() else {"generated": [], "hotpotqa": {}}


def test_the_record_exists() -> None:
    assert RECORD["generated"] and RECORD["hotpotqa"], f"{rc.FIXTURE} is missing; record it with {rc.RERECORD}"


@pytest.mark.parametrize("i", range(len(RECORD["generated"])))
def test_generated_pools_decide_as_recorded(i: int) -> None:
    entry = RECORD["generated"][i]
    question, cands, pol = rc.pool_of(entry)
    features = FeatureCache()
    _same(cands, question, pol, features, entry["out"])
    _same(cands, question, pol, features, entry["out"])  # warm


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pools())
def test_generated_pools_decide_alike_cold_and_warm(pool: tuple[str, list[Candidate], Policy]) -> None:
    _check_pool(pool)


@pytest.mark.slow
@settings(max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pools())
def test_many_generated_pools_decide_alike_cold_and_warm(pool: tuple[str, list[Candidate], Policy]) -> None:
    _check_pool(pool)


@settings(max_examples=200, deadline=None)
@given(st.lists(texts(), max_size=12), texts())
def test_bm25_floats_follow_the_formula(docs: list[str], query: str) -> None:
    """Okapi BM25 (k1 1.2, b 0.75, idf log(1 + (N - df + 0.5) / (df + 0.5))) over the pool,
    summed over the question's distinct words in order, computed here the plain way."""
    import math
    from collections import Counter

    from docket.text import content_words, words

    tfs = [Counter(words(d)) for d in docs]
    lens = [sum(tf.values()) for tf in tfs]
    avg = (sum(lens) / len(lens)) if lens else 0.0
    q = list(dict.fromkeys(content_words(query)))
    want = []
    for tf, n in zip(tfs, lens):
        s = 0.0
        for w in q:
            f = tf.get(w, 0)
            if not f:
                continue
            df = sum(1 for t in tfs if w in t)
            idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
            s += idf * f * 2.2 / (f + 1.2 * (1 - 0.75 + 0.75 * n / avg))
        want.append(s)
    got = rescore.bm25_scores(query, docs)
    assert len(got) == len(want)
    assert all(math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) for a, b in zip(got, want)), (got, want)


@pytest.mark.parametrize("size", [200, 1000])
def test_real_hotpotqa_pools_decide_as_recorded(shared_data: Path, size: int) -> None:
    features = FeatureCache()
    recorded = RECORD["hotpotqa"][str(size)]
    pools_ = rc.hotpot_pools(shared_data, size)
    assert len(pools_) == len(recorded)
    for (q, cands), want in zip(pools_, recorded):
        _same(cands, q, Policy(), features, want)


def test_a_full_vocabulary_restarts_and_rebuilds_stale_ids(shared_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past its capacity the word vocabulary starts afresh (bounded memory); chunks indexed with
    the old one are re-indexed on their next pool, and decisions do not change."""
    from docket import features

    questions, chunks = rc.hotpot(shared_data)
    monkeypatch.setattr(features, "VOCABULARY_CAPACITY", 500)
    rng = random.Random(7)
    cache = FeatureCache()
    seen = []  # the vocabularies themselves: a freed one's id() can be reused by its successor
    for q in questions[:4]:  # the same 150 chunks each time: after a restart every one is stale
        pool = rng.sample(chunks[:150], 150)
        cands = [Candidate(c, round(rng.random(), 6), r) for r, c in enumerate(pool, 1)]
        _same(cands, q, Policy(), cache)
        seen.append(features.current_vocabulary())
    assert any(v is not seen[0] for v in seen)  # the vocabulary did restart


def test_threads_sharing_one_cache_decide_as_a_cold_run(shared_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Concurrent assemblies index words into one vocabulary (and restart it) at once: ids stay
    unique, so every thread decides as a cold single-threaded run does."""
    from concurrent.futures import ThreadPoolExecutor

    from docket import features

    questions, chunks = rc.hotpot(shared_data)
    monkeypatch.setattr(features, "VOCABULARY_CAPACITY", 3000)
    cache = FeatureCache()

    def job(seed: int) -> None:
        rng = random.Random(seed)
        for q in rng.sample(questions, 3):
            pool = rng.sample(chunks, 150)
            _same([Candidate(c, round(rng.random(), 6), r) for r, c in enumerate(pool, 1)], q, Policy(), cache)

    with ThreadPoolExecutor(4) as ex:
        list(ex.map(job, range(8)))
