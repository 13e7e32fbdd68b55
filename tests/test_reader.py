"""The shipped answerability reader: small, numpy-only, tied to its embedder, opt-in in the gate."""

from __future__ import annotations

import time

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from docket.assemble import assemble
from docket.demo import DISCOUNT_QUESTION, REFUND_QUESTION, nimbus_chunks
from docket.embed import HashEmbedder, default_embedder
from docket.policy import Policy
from docket.reader import FEATURES, Reader, features, reader_for, shipped
from docket.store.base import MemoryStore

READER = Policy().updated(answerable={"reader": True})


def test_the_shipped_reader_loads_and_belongs_to_minilm():
    r = shipped()
    assert r is not None and r.embedder == default_embedder().name
    assert reader_for(default_embedder().name) is r
    assert reader_for(HashEmbedder.name) is None and reader_for("acme-embed-v1") is None and reader_for(None) is None
    assert Reader.of(r.to_json()).threshold == r.threshold  # round trip
    assert r.meta["script"] == "benchmarks/train_reader.py"


def test_reader_features_are_finite_and_deterministic_on_a_50_candidate_pool():
    texts = [f"Passage {i} about the Rhine, which flows {i} km into the North Sea." for i in range(50)]
    cos = list(np.linspace(0.7, 0.1, 50))
    a = features("Where does the Rhine flow?", texts, cos)
    assert a.shape == (len(FEATURES),) and np.isfinite(a).all()
    assert (a == features("Where does the Rhine flow?", texts, cos)).all()
    r = shipped()
    assert r is not None
    t0 = time.perf_counter()
    p = float(r.probability(a)[0])
    assert 0.0 <= p <= 1.0 and time.perf_counter() - t0 < 0.05


@given(st.text(max_size=60), st.lists(st.text(min_size=1, max_size=80), max_size=6))
def test_reader_features_are_total(question: str, texts: list[str]) -> None:
    cos = [0.5 - 0.05 * i for i in range(len(texts))]
    x = features(question, texts, cos)
    assert x.shape == (len(FEATURES),) and np.isfinite(x).all()


def test_the_reader_gate_on_nimbus_finds_refunds_and_refuses_what_it_does_not_hold():
    store = MemoryStore(nimbus_chunks())
    b = assemble(REFUND_QUESTION, store=store, policy=READER, budget=250)
    assert b.found
    b = assemble("Do you sell garden furniture?", store=store, policy=READER, budget=250)
    assert not b.found
    ev = next(e for e in b.trace if e["action"] == "not_found")
    assert "reader" in ev["reason"] and {"p_answerable", "threshold", "top", "cov_best"} <= set(ev["numbers"])
    assert isinstance(assemble(DISCOUNT_QUESTION, store=store, policy=READER, budget=250).found, bool)


def test_the_reader_never_reaches_another_embedder():
    """With the hash embedder the reader's MiniLM weights do not apply: the gate stays off."""
    store = MemoryStore(nimbus_chunks())
    b = assemble(REFUND_QUESTION, store=store, policy=READER, embedder=HashEmbedder(64), budget=250)
    assert b.found and any(e["move"] == "answerable" and e["action"] == "off" for e in b.trace)
