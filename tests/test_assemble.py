import pytest

from docket.assemble import assemble, rank_by_cosine
from docket.demo import REFUND_QUESTION
from docket.embed import default_embedder
from docket.policy import MOVE_NAMES, Policy
from docket.store.base import MemoryStore

from helpers import mk


def test_equal_authority_conflict_reaches_prompt_and_json():
    a = mk("a", doc="terms-eu", text="Annual plans can be refunded within 30 days of purchase.", source_type="policy")
    b = mk("b", doc="terms-global", text="Annual plans can be refunded within 14 days of purchase.", source_type="policy")
    br = assemble("How long do I have to get a refund on an annual plan?", store=MemoryStore([a, b]))
    assert len(br.sources) == 2  # both kept, not collapsed as duplicates
    assert br.conflicts[0]["kind"] == "equal_authority" and sorted(br.conflicts[0]["labels"]) == ["S1", "S2"]
    assert "disagree" in br.user and "cite both" in br.user


@pytest.mark.parametrize("move", MOVE_NAMES)
def test_every_move_can_be_switched_off(nimbus_store, move):
    br = assemble(REFUND_QUESTION, store=nimbus_store, policy=Policy().with_moves_off(move), budget=400)
    assert br.found
    moves_logged = {e["move"] for e in br.trace}
    if move in ("versions", "dedup", "expand", "order"):
        assert move not in moves_logged


def test_versions_off_lets_retired_rule_in(nimbus_store):
    br = assemble(REFUND_QUESTION, store=nimbus_store, policy=Policy().with_moves_off("versions"), budget=2000)
    assert any("pol2-3" in s["chunks"] or any("pol2-3" in a["chunks"] for a in s.get("also_in", []))
               for s in br.sources.values())


def test_line_format_and_anthropic_blocks(nimbus_store):
    br = assemble(REFUND_QUESTION, store=nimbus_store, policy=Policy().updated(render={"format": "lines"}), budget=400)
    # docket's fields (version, date) before the author's (title): issue 20 §4
    assert "ID: S1 | VERSION: v3 | DATE: 2026-03-01 | TITLE:" in br.user and "| Annual plans are billed" in br.user
    req = br.anthropic()
    blocks = req["messages"][0]["content"]
    docs = [b for b in blocks if b["type"] == "document"]
    assert len(docs) == len(br.sources)
    assert all(d["citations"] == {"enabled": True} for d in docs)
    assert blocks[-1]["type"] == "text" and REFUND_QUESTION in blocks[-1]["text"]


def test_tokens_per_section_add_up(nimbus_store):
    br = assemble(REFUND_QUESTION, store=nimbus_store, budget=400)
    t = br.tokens
    assert t["total"] == t["system"] + t["user"]
    assert t["documents"] <= 400 and t["tags"] == t["documents"] - t["passage_text"] > 0
    assert br.system.startswith(Policy().brief.role)  # stable text first
    assert br.user.rstrip().endswith("like [S1].")
    assert '"I do not know from the provided sources."' in br.system


def test_repeated_rule_is_configurable(nimbus_store):
    pol = Policy().updated(brief={"repeat": "both"})
    br = assemble(REFUND_QUESTION, store=nimbus_store, policy=pol, budget=400)
    assert br.user.rstrip().endswith('"I do not know from the provided sources."')


def test_custom_refusal_sentence(nimbus_store):
    pol = Policy().updated(brief={"refusal": "Sorry, the policy does not say."})
    br = assemble(REFUND_QUESTION, store=nimbus_store, policy=pol, budget=400)
    assert '"Sorry, the policy does not say."' in br.system and br.refusal == "Sorry, the policy does not say."


def test_rank_by_cosine_is_deterministic(nimbus):
    emb = default_embedder()
    a = rank_by_cosine(REFUND_QUESTION, nimbus, emb)
    b = rank_by_cosine(REFUND_QUESTION, list(reversed(nimbus)), emb)
    assert [c.chunk.id for c in a] == [c.chunk.id for c in b]
    assert a[0].chunk.id == "pol3-4"


def test_margin_drops_candidates_far_below_the_best_and_says_so():
    from docket.model import Candidate
    from docket.tokens import WordCounter

    chunks = [mk("a", "Alpha facts here.", doc="a"), mk("b", "Beta facts here.", doc="b"), mk("c", "Gamma text.", doc="c")]
    cands = [Candidate(c, s, r) for r, (c, s) in enumerate(zip(chunks, [0.9, 0.7, 0.45]), 1)]
    pol = Policy().updated(pack={"margin": 0.3}, rescore={"enabled": False}, dedup={"enabled": False},
                           versions={"enabled": False})
    b = assemble("q?", cands, store=MemoryStore(chunks), policy=pol, counter=WordCounter(), budget=500)
    assert [p.ids for p in b.passages] == [("a",), ("b",)]
    drop = [t for t in b.trace if t["move"] == "floor" and t["action"] == "drop"]
    assert drop and drop[0]["chunks"] == ["c"] and "margin 0.3" in drop[0]["reason"]
    assert assemble("q?", cands, store=MemoryStore(chunks), policy=pol.updated(pack={"margin": None}),
                    counter=WordCounter(), budget=500).tokens["passages"] == 3
