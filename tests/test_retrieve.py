"""Retrieval: RRF, the cosine score contract, and access control end to end (both backends),
including that the assembler's neighbour expansion cannot pull a forbidden chunk in."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest_pg import pg_server, pg_url  # noqa: F401
from store_cases import EMB, qvec, version

from docket.api import Session
from docket.errors import InputError
from docket.retrieve import embedder_for, retrieve, rrf
from docket.store.factory import open_store
from docket.store.protocol import Filters, Principal, Store


def test_rrf_sums_reciprocal_ranks() -> None:
    fused = rrf([["a", "b", "c"], ["c", "a", "d"]], k=60)
    assert [cid for cid, _ in fused] == ["a", "c", "b", "d"]
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 62)
    assert rrf([]) == []


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path) -> Iterator[Store]:
    location = str(tmp_path / "r.db") if request.param == "sqlite" else request.getfixturevalue("pg_url")
    s = open_store(location)
    s.set_meta({"embedder": EMB.name, "dim": str(EMB.dim)})
    s.write_version(version("refund", 1, [
        "refund policy overview for customers",
        "annual plans refund within 14 days of purchase",
        "the early termination fee is 50 euros for annual plans",
    ], acl=None))
    s.write_version(version("kb", 1, ["office opening hours are nine to five", "parking is free for visitors"]))
    yield s
    s.close()


def test_modes_and_score_is_the_cosine(store: Store) -> None:
    q = "annual plans refund"
    for mode in ("dense", "bm25", "fused"):
        cands = retrieve(store, q, k=3, mode=mode, embedder=EMB)
        assert cands[0].chunk.id == "refund-v1-1", mode
        assert [c.rank for c in cands] == [1, 2, 3]
        for c in cands:
            assert c.score == pytest.approx(float(qvec(q) @ qvec(c.chunk.text)), abs=1e-5)
    assert embedder_for(store).name == EMB.name
    with pytest.raises(InputError, match="mode"):
        retrieve(store, q, mode="magic")


def test_filters_reach_retrieval(store: Store) -> None:
    cands = retrieve(store, "annual plans refund", k=10, filters=Filters(docs=("kb",)))
    assert {c.chunk.doc for c in cands} == {"kb"}


def _restricted(store: Store) -> None:
    """pol v1: a public hit between a public and a finance-only neighbour; hr: finance-only."""
    store.write_version(version("pol", 1, [
        "holiday rules intro for everyone",
        "holiday carry over rules allow five days",
        "holiday payout secret rate is 120 percent",
    ]))
    # the third chunk is restricted: rewrite the version with per-chunk acls
    dv = version("pol", 1, ["holiday rules intro for everyone", "holiday carry over rules allow five days",
                            "holiday payout secret rate is 120 percent"])
    # one section, so only the ACL (not a section boundary) can stop neighbour expansion
    chunks = [c.model_copy(update={"section": "Holiday"}) for c in dv.chunks]
    chunks[2] = chunks[2].model_copy(update={"acl": ("finance",)})
    dv.chunks = chunks
    store.write_version(dv)
    store.write_version(version("hr", 1, ["holiday payout secret rate table"], acl=("finance",)))


def test_forbidden_chunks_never_reach_ranking_or_prompt(store: Store) -> None:
    _restricted(store)
    q = "holiday payout secret rate"
    for mode in ("dense", "bm25", "fused"):
        ids = {c.chunk.id for c in retrieve(store, q, k=50, mode=mode)}
        assert "pol-v1-2" not in ids and "hr-v1-0" not in ids, mode
    q = "holiday carry over rules five days"  # ranks pol-v1-1 first: expansion would reach pol-v1-2
    brief = Session(store).ask(q, floor=0.0, budget=2000).brief
    shown = {cid for s in brief.sources.values() for cid in s["chunks"]}
    prompt = " ".join(m["content"] for m in brief.messages)
    assert {"pol-v1-0", "pol-v1-1"} <= shown  # the public hit, expanded to its public neighbour...
    assert "pol-v1-2" not in shown and "120 percent" not in prompt  # ...but neighbour expansion stops at the ACL
    assert "secret rate table" not in prompt
    # the same candidates assembled over the raw store (no view given) stop at the ACL too:
    # assemble scopes every store to its principal (anonymous here)
    from docket.assemble import assemble

    raw = assemble(q, retrieve(store, q, k=50), store=store, floor=0.0, budget=2000, embedder=EMB)
    assert "pol-v1-2" not in {cid for s in raw.sources.values() for cid in s["chunks"]}
    assert {"pol-v1-0", "pol-v1-1"} <= {cid for s in raw.sources.values() for cid in s["chunks"]}


def test_a_member_of_the_group_sees_the_restricted_chunks(store: Store) -> None:
    _restricted(store)
    alice = Principal("alice", frozenset({"finance"}))
    ids = {c.chunk.id for c in retrieve(store, "holiday payout secret rate", k=50, filters=Filters(principal=alice))}
    assert {"pol-v1-2", "hr-v1-0"} <= ids
    brief = Session(store).ask("holiday payout secret rate", filters=Filters(principal=alice), floor=0.0,
                               budget=2000).brief
    assert "120 percent" in " ".join(m["content"] for m in brief.messages)
