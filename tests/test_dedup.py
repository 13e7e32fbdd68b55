from docket.moves.dedup import collapse, mmr, normalize
from docket.policy import Policy

from helpers import FixedEmbedder, context, mk, passages


def test_normalize_ignores_case_and_punctuation():
    assert normalize("Refunds: 30 days!") == normalize("refunds 30 days")


def test_exact_copy_dropped_by_hash_even_without_vectors():
    a = mk("a", doc="x", text="Refunds within 30 days.")
    b = mk("b", doc="y", text="REFUNDS within 30 days")
    ctx = context([a, b])  # no embedder: hash only
    out = collapse(passages([a, b]), ctx)
    assert [p.first.id for p in out] == ["a"]
    assert out[0].also_in[0]["chunks"] == ["b"]


def test_near_copy_keeps_higher_authority_at_best_rank_with_provenance():
    help_copy = mk("faq", doc="faq", text="Cancel within 30 days for a refund.", source_type="help")
    other = mk("o", doc="o", text="Something else entirely.", source_type="policy")
    policy_copy = mk("pol", doc="pol", text="You can cancel within 30 days for a full refund.", source_type="policy")
    emb = FixedEmbedder({help_copy.text: [1, 0.05, 0, 0, 0, 0, 0, 0], policy_copy.text: [1, 0.06, 0, 0, 0, 0, 0, 0],
                         other.text: [0, 0, 1, 0, 0, 0, 0, 0]})
    ctx = context([help_copy, other, policy_copy], embedder=emb)
    out = collapse(passages([help_copy, other, policy_copy], [0.9, 0.8, 0.7]), ctx)
    assert [p.first.id for p in out] == ["pol", "o"]
    kept = out[0]
    assert kept.rank == 1 and kept.score == 0.9
    assert kept.also_in[0]["doc"] == "faq" and kept.also_in[0]["cosine"] >= 0.95
    drop = [e for e in ctx.trace.events if e.action == "drop"][0]
    assert drop.chunks == ["faq"] and "authority" in drop.reason


def test_below_threshold_is_kept():
    a = mk("a", text="alpha")
    b = mk("b", doc="e", text="beta")
    emb = FixedEmbedder({"alpha": [1, 0, 0, 0, 0, 0, 0, 0], "beta": [1, 1, 0, 0, 0, 0, 0, 0]})  # cosine 0.707
    out = collapse(passages([a, b]), context([a, b], embedder=emb))
    assert len(out) == 2


def test_threshold_is_configurable():
    a = mk("a", text="alpha")
    b = mk("b", doc="e", text="beta")
    emb = FixedEmbedder({"alpha": [1, 0, 0, 0, 0, 0, 0, 0], "beta": [1, 1, 0, 0, 0, 0, 0, 0]})
    pol = Policy().updated(dedup={"threshold": 0.7})
    out = collapse(passages([a, b]), context([a, b], policy=pol, embedder=emb))
    assert len(out) == 1


def test_conflict_pairs_are_never_collapsed():
    a = mk("a", doc="x", text="Refunds within 30 days.")
    b = mk("b", doc="y", text="Refunds within 14 days.")
    emb = FixedEmbedder({a.text: [1, 0, 0, 0, 0, 0, 0, 0], b.text: [1, 0.01, 0, 0, 0, 0, 0, 0]})
    ctx = context([a, b], embedder=emb)
    ctx.conflicts.append({"chunks": ["a", "b"], "kind": "equal_authority", "reason": "numbers differ"})
    assert len(collapse(passages([a, b]), ctx)) == 2


def test_mmr_prefers_variety_on_cosine_scale():
    q = "question"
    a = mk("a", text="A")
    a2 = mk("a2", doc="e", text="A2")
    b = mk("b", doc="f", text="B")
    emb = FixedEmbedder({q: [1, 0.5, 0, 0, 0, 0, 0, 0], "A": [1, 0.2, 0, 0, 0, 0, 0, 0], "A2": [1, 0.2, 0.1, 0, 0, 0, 0, 0],
                         "B": [0.3, 1, 0, 0, 0, 0, 0, 0]})
    pol = Policy().updated(dedup={"mmr": True, "mmr_lambda": 0.5, "mmr_k": 2, "threshold": 0.999})
    ctx = context([a, a2, b], question=q, policy=pol, embedder=emb)
    out = mmr(passages([a, a2, b]), ctx)
    assert [p.first.id for p in out] == ["a", "b"]
    assert any(e.action == "drop" and e.chunks == ["a2"] for e in ctx.trace.events)
