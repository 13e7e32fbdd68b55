"""Per-chunk features are computed once, keyed by content, bounded; the fast paths the assembler
takes (Passage.of_chunk, Policy.overridden, one similarity matrix, lazy trace events) give the
same values as the slow ones."""

from __future__ import annotations

import numpy as np
import pytest

from docket.assemble import assemble
from docket.context import Context, check_vectors, pairs_at_least
from docket.demo import REFUND_QUESTION
from docket.embed import HashEmbedder
from docket.errors import InputError
from docket.features import FeatureCache, content_key, default_cache, digest
from docket.model import Passage, Trace, TraceEvent
from docket.policy import Policy
from docket.store.base import MemoryStore

from helpers import cands, mk


def test_features_are_computed_once_per_content_and_shared_by_equal_chunks() -> None:
    cache = FeatureCache(capacity=100)
    a = mk("a", "Nimbus refunds annual plans within 30 days.", title="Refunds")
    f1 = cache.features(a)
    assert cache.features(a) is f1 and cache.computed == 1
    same = a.model_copy()  # another object, same content (a store row read again)
    assert cache.features(same) is f1 and cache.computed == 1
    other = a.model_copy(update={"title": "Refund policy"})  # the header changes: other features
    assert cache.features(other) is not f1 and cache.computed == 2
    assert content_key(a) == content_key(same) != content_key(other)
    assert digest(content_key(a)) == digest(content_key(same)) and len(digest(content_key(a))) == 64


def test_cache_is_bounded() -> None:
    cache = FeatureCache(capacity=10)
    chunks = [mk(f"c{i}", f"Text number {i}.") for i in range(100)]
    for c in chunks:
        cache.features(c)
    assert len(cache) <= 10
    assert cache.computed == 100


def test_vectors_stay_per_object_and_bad_vectors_fail_as_before() -> None:
    cache = FeatureCache()
    v = np.zeros(4, dtype=np.float32)
    v[0] = 1.0
    a = mk("a", "Same text.", vector=v.tolist())
    b = mk("a", "Same text.", vector=[0.0, 1.0, 0.0, 0.0])
    ea, eb = cache.entry(a), cache.entry(b)
    assert ea.features is eb.features  # the content is shared ...
    assert not np.array_equal(ea.vector, eb.vector)  # ... the vectors are not
    bad = mk("bad", "x", vector=[0.5, 0.5, 0.0, 0.0])
    ctx = Context(question="q", store=MemoryStore([bad]), policy=Policy(), counter=None, features=cache)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="not unit length") as got:
        ctx.vectors([bad])
    with pytest.raises(InputError) as want:
        check_vectors([bad], None)
    assert str(got.value) == str(want.value)


def test_a_second_assembly_computes_no_features(nimbus, nimbus_store) -> None:
    emb = HashEmbedder()
    first = assemble(REFUND_QUESTION, store=nimbus_store, embedder=emb, budget=400)
    before = default_cache().computed
    again = assemble(REFUND_QUESTION, store=nimbus_store, embedder=emb, budget=400)
    assert default_cache().computed == before
    assert again.to_json() == first.to_json()


def test_of_chunk_equals_the_dataclass_constructor() -> None:
    c = mk("a", "  Some text.  ", status="user-generated")
    fast, slow = Passage.of_chunk(c, 0.5, 3), Passage((c,), 0.5, 3, ("a",))
    assert fast == slow and repr(fast) == repr(slow)
    assert (fast.text, fast.ids, fast.doc, fast.version, fast.untrusted) == (slow.text, slow.ids, slow.doc, slow.version,
                                                                            slow.untrusted)
    assert fast.with_(rank=1) == slow.with_(rank=1)


@pytest.mark.parametrize("sections", [{"pack": {"budget": 0}}, {"pack": {"bogus": 1}}, {"as_of": "not a date"},
                                      {"pack": {"floor": "x"}}, {"pack": {"budget": 7, "floor": 0.0}}])
def test_overridden_validates_like_updated(sections: dict) -> None:
    p = Policy()
    try:
        want = p.updated(**sections)
    except InputError as e:
        with pytest.raises(InputError) as got:
            p.overridden(**sections)
        assert str(got.value) == str(e)
        return
    assert p.overridden(**sections) == want


def test_one_matrix_gives_every_submatrix() -> None:
    emb = HashEmbedder(dim=32)
    chunks = [mk(f"c{i}", f"word{i % 4} shared text {i}") for i in range(12)]
    ctx = Context(question="q", store=MemoryStore(chunks), policy=Policy(), counter=None, embedder=emb,  # type: ignore[arg-type]
                  features=FeatureCache())
    ctx.pool = chunks
    full = ctx.similarities(chunks)
    sub = [chunks[i] for i in (1, 4, 5, 9)]
    v = ctx.vectors(sub)
    assert np.allclose(ctx.similarities(sub), v @ v.T, atol=1e-6)
    assert ctx.similarities(chunks) is full
    outsider = mk("new", "word1 a fetched chunk")  # not in the pool: the matrix grows
    got = ctx.similarities([chunks[0], outsider])
    w = ctx.vectors([chunks[0], outsider])
    assert np.allclose(got, w @ w.T, atol=1e-6)


def test_pairs_at_least_is_the_float64_comparison() -> None:
    rng = np.random.default_rng(0)
    for _ in range(50):
        s = rng.random((25, 25)).astype(np.float32)
        s[2, 5] = np.float32(0.95)  # just below 0.95 as a float64
        s[3, 6] = np.nextafter(np.float32(0.95), np.float32(1))
        for thr in (0.95, 0.5, float(np.float32(0.95))):
            rows, cols = pairs_at_least(s, thr)
            assert list(zip(rows, cols)) == [(i, j) for i in range(25) for j in range(i + 1, 25) if float(s[i, j]) >= thr]


def test_trace_events_are_built_when_read_and_match_the_json() -> None:
    t = Trace()
    t.add("pack", "skip", ("a",), "12 tokens", tokens=12)
    t.add("floor", "drop", ["b", "c"], "below")
    assert [e.to_json() for e in t.events] == t.to_json()
    assert t.events[0] == TraceEvent("pack", "skip", ["a"], "12 tokens", {"tokens": 12})
    t.add("order", "reorder", [], "x")
    assert len(t.events) == 3 == len(t) and t.to_json()[-1] == {"move": "order", "action": "reorder", "chunks": [],
                                                                 "reason": "x"}
    assert Trace(t.events).to_json() == t.to_json()


def test_rescore_and_pack_read_cached_features(nimbus) -> None:
    """The features a pool reads are the ones computed for its chunks (not recomputed per query)."""
    cache = default_cache()
    pool = cands(nimbus)
    cache.clear()
    assemble(REFUND_QUESTION, pool, store=MemoryStore(nimbus), embedder=HashEmbedder(), budget=300)
    f = cache.features(nimbus[0])
    # filled by packing (the best passage is counted) and re-scoring: on first sight a glance (an
    # index without word rows, issue 21), when the chunk is seen again its full index
    assert f._rescore_index.vocab is None and f._rescore_index.head and f.costs
    assemble(REFUND_QUESTION, pool, store=MemoryStore(nimbus), embedder=HashEmbedder(), budget=300)
    assert cache.features(nimbus[0]) is f and f._rescore_index.vocab is not None and f._rescore_index.body
