"""The "not found" floor: the best candidate's ranker score must reach it (default chosen on
public data); pack.floor alone says which candidates are noise."""

from __future__ import annotations

import pytest

from docket.assemble import assemble
from docket.demo import DISCOUNT_QUESTION, REFUND_QUESTION, nimbus_chunks
from docket.policy import NOT_FOUND_FLOOR, Policy, load_policy_dict
from docket.store.base import MemoryStore

from helpers import cands, mk

RULE = Policy().updated(answerable={"reader": False})  # the rule gate (the reader is tested in test_reader.py)


def test_default_nimbus_refund_found_discount_not_found():
    store = MemoryStore(nimbus_chunks())
    assert assemble(REFUND_QUESTION, store=store, budget=250).found
    b = assemble(DISCOUNT_QUESTION, store=store, budget=250)
    assert not b.found
    assert any(e["move"] == "floor" and e["action"] == "not_found" for e in b.trace)
    # a question whose best match clears the noise floor (0.40) but not the not-found floor
    chunks = nimbus_chunks()
    ranked = cands(chunks, [0.45] + [0.2] * (len(chunks) - 1))
    b = assemble("Is there a loyalty programme?", ranked, store=MemoryStore(chunks), budget=250, policy=RULE)
    assert not b.found
    ev = next(e for e in b.trace if e["move"] == "floor" and e["action"] == "not_found")
    assert f"not-found floor {NOT_FOUND_FLOOR}" in ev["reason"] and "chosen on public data" in ev["reason"]


def test_where_the_not_found_floor_comes_from():
    assert Policy().not_found_floor()[0] == NOT_FOUND_FLOOR
    assert Policy().updated(answerable={"floor": 0.7}).not_found_floor() == (0.7, "answerable.floor")
    # setting pack.floor (policy file or --floor) keeps the old meaning: that one floor decides
    assert Policy().updated(pack={"floor": 0.2}).not_found_floor() == (None, "pack.floor")
    assert load_policy_dict({"pack": {"floor": -1.0}}).not_found_floor()[0] is None
    # other settings leave the default in place
    assert Policy().updated(pack={"budget": 300}, rescore={"enabled": False}).not_found_floor()[0] == NOT_FOUND_FLOOR


def _pool():
    a = mk("a", doc="a", title="Rhine", text="The Rhine flows into the North Sea.")
    b = mk("b", doc="b", title="Apples", text="Apples grow on trees.")
    return [a, b]


def test_the_floor_reads_the_rankers_score_not_the_re_scored_one():
    """Re-scoring lifts the top of every pool (the pool's best BM25 match gets the full lexical
    bonus): a floor on re-scored scores would say "found" for nearly everything."""
    chunks = _pool()
    # below the noise floor too, so the keyword evidence (the chunk holds every word of the
    # question) does not rescue it: only re-scoring could lift it, and the gate ignores that
    ranked = cands(chunks, [NOT_FOUND_FLOOR - 0.1, 0.1])
    b = assemble("Where does the Rhine flow?", ranked, store=MemoryStore(chunks), budget=500, policy=RULE)
    assert not b.found
    assert any(e["action"] == "not_found" and "before re-scoring" in e["reason"] for e in b.trace)
    ranked = cands(chunks, [NOT_FOUND_FLOOR + 0.01, 0.1])
    assert assemble("Where does the Rhine flow?", ranked, store=MemoryStore(chunks), budget=500, policy=RULE).found


@pytest.mark.parametrize("floor,found", [(0.0, True), (1.5, False)])
def test_an_explicit_floor_argument_decides_alone(floor, found):
    chunks = _pool()
    ranked = cands(chunks, [0.3, 0.1])
    b = assemble("Where does the Rhine flow?", ranked, store=MemoryStore(chunks), budget=500, floor=floor)
    assert b.found is found
