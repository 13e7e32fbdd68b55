"""The sweep on tiny sets (hash embedder), the baselines, and the peers (skipped without the extra)."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from docket.embed import HashEmbedder
from docket.eval.dataset import Item, LabelledSet
from docket.eval.peers import Query, run_greedy, run_topk
from docket.eval.runner import EvalConfig, _choose_k, evaluate, prepare
from docket.model import Candidate, parse_chunk
from docket.policy import Policy
from docket.tokens import WordCounter

HAS_PEERS = all(importlib.util.find_spec(m) is not None for m in ("langchain_community", "llama_index", "haystack"))
peers = pytest.mark.skipif(not HAS_PEERS, reason="peers extra not installed: pip install -e '.[peers]'")


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKET_EVAL_CACHE", str(tmp_path / "cache"))


def chunk(cid, text, **kw):
    return parse_chunk({"id": cid, "doc": cid, "text": text, **kw})


def words(n, word):
    return " ".join([word] * n)


def query(texts, question="q"):
    emb = HashEmbedder()
    chunks = [chunk(f"c{i}", t) for i, t in enumerate(texts)]
    ranked = [Candidate(c, 1.0 - i / 10, i + 1) for i, c in enumerate(chunks)]
    return Query(question, ranked, emb.embed([question])[0], emb.embed(texts))


def test_greedy_stops_at_the_first_misfit():
    q = query([words(10, "alpha"), words(100, "beta"), words(5, "gamma")])
    out = run_greedy(q, 50, WordCounter())
    assert out.ids == ["c0"]  # gamma would fit, but greedy stopped at beta
    assert out.evidence_tokens == 10


def test_topk_takes_k():
    q = query(["a b", "c d", "e f"])
    assert run_topk(q, 2, WordCounter()).ids == ["c0", "c1"]


def test_choose_k_keeps_mean_within_budget():
    class Out:
        def __init__(self, t):
            self.evidence_tokens = t

    by_k = {1: [Out(100), Out(120)], 2: [Out(200), Out(260)], 3: [Out(300), Out(400)]}
    assert _choose_k(by_k, 250) == 2  # mean 230 <= 250, mean 350 > 250
    assert _choose_k(by_k, 50) == 1  # never below one


def tiny_set():
    """Two questions: the gold of q1 ranks third behind a long distractor; q2 is unanswerable."""
    items = [
        Item("q1", "What colour is the zebra?", [
            chunk("z1", "Zebra facts: the zebra is black and white.", title="Zebra"),
            chunk("d1", words(60, "filler") + " zebra colour", title="Long"),
            chunk("z2", "A zebra is black and white striped.", title="Zebra stripes"),
        ], gold=["z1", "z2"], answers=["black and white"]),
        Item("q2", "Who won the 1920 chess cup?", [
            chunk("n1", "Apples grow on trees.", title="Apples"),
        ], gold=[], answerable=False),
    ]
    return LabelledSet("tiny", items)


def test_evaluate_shape_and_hand_checked_figures():
    lset = tiny_set()
    pol = Policy().updated(pack={"floor": -1.0}, render={"fields": ["title"]})
    res = evaluate(lset, EvalConfig(budgets=(40, 400), policy=pol, compare=("greedy", "topk"), ablate=True,
                                    price=2.0, show_progress=False),
                   embedder=HashEmbedder(), counter=WordCounter())
    json.dumps(res)  # the --json document is serialisable
    assert set(res["budgets"]) == {"40", "400"}
    big = res["budgets"]["400"]
    assert big["gold_in_prompt"] == 1.0 and big["gold_recall"] == 1.0
    # 400 words hold everything: q1 and q2 both produce prompts, so "not found" recall is 0 at floor -1
    assert big["not_found"]["recall"] == 0.0
    assert "cost_per_1000_usd" in big
    assert set(res["compare"]) == {"greedy", "topk"}
    assert "k" in res["compare"]["topk"]["40"]
    assert "pack" in res["ablation"] and "dedup" in res["ablation"]


def test_floor_gives_not_found_figures():
    lset = tiny_set()
    pol = Policy().updated(pack={"floor": 0.99})
    res = evaluate(lset, EvalConfig(budgets=(400,), policy=pol, show_progress=False),
                   embedder=HashEmbedder(), counter=WordCounter())
    nf = res["budgets"]["400"]["not_found"]
    # nothing reaches 0.99: both questions "not found"; one is really unanswerable
    assert nf["tp"] == 1 and nf["fp"] == 1 and nf["precision"] == 0.5 and nf["recall"] == 1.0


def test_prepare_uses_given_scores():
    lset = tiny_set()
    lset.items[0].scores = [0.1, 0.9, 0.5]
    p = prepare(lset, HashEmbedder())[0]
    assert [c.chunk.id for c in p.query.ranked] == ["d1", "z2", "z1"]
    assert np.allclose(p.query.vecs[0], HashEmbedder().embed([lset.items[0].chunks[1].text])[0])


@peers
def test_langchain_keeps_the_worse_ranked_copy():
    from docket.eval.peers import run_langchain

    q = query(["alpha beta gamma", "alpha beta gamma!", "delta epsilon"])
    out = run_langchain(q, 10, WordCounter())
    assert "c0" not in out.ids and "c1" in out.ids  # PEERS.md 3.1, reproduced


@peers
def test_haystack_overshoots_in_words():
    from docket.eval.peers import run_haystack

    q = query([words(11, f"w{i}") for i in range(5)])
    out = run_haystack(q, 34, WordCounter())  # 34 tokens -> 25 words; it keeps the crossing document
    assert len(out.ids) == 3 and out.evidence_tokens == 33


@peers
def test_llamaindex_compact_resplits_units():
    from docket.eval import metrics as M
    from docket.eval.peers import run_llamaindex

    texts = [words(30, "alpha"), words(30, "beta")]
    q = query(texts)
    out = run_llamaindex(q, 45, WordCounter())
    assert len(out.units) == 1 and out.evidence_tokens <= 45
    assert out.extra["refine_calls"] >= 1
    # LongContextReorder puts rank 2 first (n=2); the re-split then cuts the best unit in half
    assert M.gold_in_prompt([texts[1]], out.units) is True
    assert M.gold_in_prompt([texts[0]], out.units) is False


@peers
def test_compare_all_peers_runs_on_the_tiny_set():
    res = evaluate(tiny_set(), EvalConfig(budgets=(400,), policy=Policy().updated(pack={"floor": -1.0}),
                                          compare=("langchain", "llamaindex", "haystack"), show_progress=False),
                   embedder=HashEmbedder(), counter=WordCounter())
    assert res["compare"]["haystack"]["400"]["gold_in_prompt"] == 1.0


def test_conflict_share_counts_prompts_that_tell_the_model_sources_disagree():
    """Two policies stating another refund window are a conflict note; two team seasons that name
    their own titles are not. Hand-checked: one of the two prompts carries a note."""
    conflict = Item("c", "How long is the refund window for annual plans?", [
        chunk("eu", "Annual plans can be refunded within 30 days of purchase.", title="EU terms"),
        chunk("gl", "Annual plans can be refunded within 14 days of purchase.", title="Global terms")], ["eu"])
    seasons = Item("s", "Who coached the Colorado team?", [
        chunk("t9", "The 2009 Colorado team represented the University of Colorado.", title="2009 Colorado team"),
        chunk("t11", "The 2011 Colorado team represented the University of Colorado.", title="2011 Colorado team")], ["t9"])
    pol = Policy().updated(pack={"floor": -1.0}, versions={"conflict_similarity": 0.0})
    res = evaluate(LabelledSet("x", [conflict, seasons]), EvalConfig(budgets=(400,), policy=pol, show_progress=False),
                   embedder=HashEmbedder(), counter=WordCounter())
    assert res["budgets"]["400"]["conflict_share"] == 0.5


def test_prepare_leaves_no_progress_callback_behind(tmp_path):
    """The progress task of the embedding step is gone once prepare returns: a later embed (Move 1's
    sentence similarity embeds new sentences mid-sweep) must not tick it (it raised KeyError in rich)."""
    from docket.eval.cache import DiskCachedEmbedder

    emb = DiskCachedEmbedder(HashEmbedder(), tmp_path / "e.sqlite")
    ticks: list[int] = []
    prepare(tiny_set(), emb, ticks.append)
    assert ticks and emb.on_progress is None
    seen = len(ticks)
    emb.embed(["a sentence the sweep had not embedded yet"])
    assert len(ticks) == seen
