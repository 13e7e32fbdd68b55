"""docket calibrate: duplicate threshold, floor, the answerability model, writing the policy."""

from __future__ import annotations

import json

import numpy as np
import pytest

from docket import answerable as A
from docket.embed import HashEmbedder
from docket.eval import calibrate as C
from docket.model import Candidate, parse_chunk
from docket.policy import load_policy


def test_duplicate_threshold_in_the_gap():
    pairs = [
        C.Pair("the fee is fifteen percent", "The fee is fifteen percent!", True),  # same words: cosine 1
        C.Pair("the fee is fifteen percent", "payouts take ten business days", False),
        C.Pair("annual plans renew each year", "monthly plans can be cancelled", False),
    ]
    out = C.fit_duplicate_threshold(pairs, HashEmbedder())
    assert out["min_same"] == pytest.approx(1.0)
    assert out["max_different"] < out["threshold"] < 1.0
    assert out["gap"] > 0 and "gap" in out["method"]


def test_duplicate_threshold_when_pairs_overlap_uses_balanced_accuracy():
    emb = HashEmbedder()
    pairs = [C.Pair("a b c d", "a b c d", True), C.Pair("a b c d", "a b c e", True),
             C.Pair("a b c d", "a b c d", False), C.Pair("x y", "p q", False)]
    out = C.fit_duplicate_threshold(pairs, emb)
    assert "overlap" in out["method"] and "balanced_accuracy" in out


def test_derived_pairs_report_how_close_different_texts_come():
    from docket.eval.dataset import Item, LabelledSet
    from docket.model import parse_chunk

    def ch(i, t):
        return parse_chunk({"id": i, "doc": i, "text": t})

    lset = LabelledSet("s", [Item("q", "q?", [ch("a", "red apples grow"), ch("b", "Red apples grow!"), ch("c", "blue sea")])])
    pairs = C.derive_pairs(lset, HashEmbedder())
    assert any(p.same for p in pairs)  # equal after normalising
    only_diff = [p for p in pairs if not p.same] + [C.Pair("x y z", "x y w", False)]
    out = C.fit_duplicate_threshold(only_diff, HashEmbedder())
    assert out["threshold"] is None and out["different_quantiles"][100] <= 1.0


def test_load_pairs_validates(tmp_path):
    p = tmp_path / "pairs.jsonl"
    p.write_text(json.dumps({"a": "x", "b": "y", "same": False}) + "\n" + json.dumps({"a": "x"}) + "\n")
    from docket.errors import InputError

    with pytest.raises(InputError) as e:
        C.load_pairs(p)
    assert ":2" in str(e.value)


def test_fit_floor_hand_checked():
    scores = [0.9, 0.8, 0.7, 0.3, 0.2, 0.6]
    answerable = [True, True, True, False, False, False]
    f = C.fit_floor(scores, answerable)
    # a floor just above 0.6 sends 0.6, 0.3, 0.2 to "not found": all three unanswerable, nothing else
    assert 0.6 < f["floor"] <= 0.7
    assert f["balanced_accuracy"] == 1.0 and f["auc"] == 1.0
    curve = C.floor_curve(scores, answerable, steps=3)
    assert curve[0]["not_found_recall"] == 0.0 and len(curve) == 3


def test_logistic_recovers_a_separating_direction():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 2))
    y = (X[:, 0] - 0.5 * X[:, 1] + 0.3 * rng.normal(size=400) > 0).astype(float)
    coef, bias = C.fit_logistic(X, y, l2=0.1)
    assert coef[0] > 0 > coef[1] and abs(coef[0]) > abs(coef[1])
    acc = ((1 / (1 + np.exp(-(X @ coef + bias))) > 0.5) == (y > 0)).mean()
    assert acc > 0.9


def test_group_folds_never_split_a_group():
    groups = ["a", "a", "b", "c", "c", "d", "e"]
    folds = C.group_folds(groups, 3)
    seen = set()
    for f in folds:
        gs = {groups[i] for i in f}
        assert not (gs & seen)
        seen |= gs
    assert sorted(np.concatenate(folds).tolist()) == list(range(len(groups)))


def test_fit_answerable_cross_validated_on_separable_data():
    rng = np.random.default_rng(1)
    n = 120
    y = np.array([i % 2 == 0 for i in range(n)])
    X = np.stack([y + 0.2 * rng.normal(size=n), rng.normal(size=n)], axis=1)
    out = C.fit_answerable(X, list(y), [str(i // 4) for i in range(n)], ["sig", "noise"], folds=4)
    assert out["cv"]["balanced_accuracy"] > 0.9
    assert out["weights"]["sig"] > abs(out["weights"]["noise"])


def test_features_and_probability():
    cands = [
        Candidate(parse_chunk({"id": "a", "doc": "a", "text": "The Rhine flows into the North Sea. It is long."}), 0.7, 1),
        Candidate(parse_chunk({"id": "b", "doc": "b", "text": "Apples are red."}), 0.3, 2),
    ]
    f = A.features(cands, "Where does the Rhine flow into?")
    assert f["top"] == 0.7 and f["gap"] == pytest.approx(0.4)
    assert f["cov_best"] > 0.9 and f["missing"] == pytest.approx(0.0)
    g = A.features(cands, "Where does the Danube flow into?")
    assert g["cov_best"] < f["cov_best"] and g["missing"] > 0
    assert A.probability({"top": 1.0}, {"top": 2.0}, -2.0) == pytest.approx(0.5)


def test_write_policy_values_merges_and_validates(tmp_path):
    p = tmp_path / "policy.toml"
    p.write_text('[render]\nfields = ["title"]\n')
    C.write_policy_values(p, {"pack": {"floor": 0.55}, "answerable": {"enabled": True, "weights": {"top": 1.5},
                                                                       "bias": -0.5, "threshold": 0.4}})
    pol = load_policy(p)
    assert pol.render.fields == ["title"] and pol.pack.floor == 0.55
    assert pol.answerable.enabled and pol.answerable.weights == {"top": 1.5} and pol.answerable.threshold == 0.4
    from docket.errors import InputError

    with pytest.raises(InputError):
        C.write_policy_values(p, {"pack": {"flor": 1}})


def test_gold_gaps_hand_checked():
    worst, gaps = C.gold_gaps([1.0, 0.8, 0.5, 0.2], [True, False, True, False])
    assert worst == pytest.approx(0.5) and gaps == pytest.approx([0.0, 0.2, 0.5, 0.8])
    assert C.gold_gaps([0.9, 0.1], [False, False])[0] is None
    assert C.gold_gaps([], [])[0] is None


def test_fit_margin_keeps_the_asked_share_and_reports_the_trade_off():
    # ten questions: nine need a gap of at most 0.3, one needs 0.9
    q = [0.1] * 5 + [0.3] * 4 + [0.9]
    pools = [[0.0, 0.1, 0.3, 0.9, 1.4]] * 10
    m = C.fit_margin(q, pools, keep=0.9)
    assert m["margin"] == pytest.approx(0.31) and m["gold_kept"] == pytest.approx(0.9)
    assert m["candidates_kept"] == pytest.approx(0.6)  # 0.0, 0.1, 0.3 of each pool
    full = C.fit_margin(q, pools, keep=1.0)
    assert full["margin"] == pytest.approx(0.91) and full["gold_kept"] == 1.0
    curve = {r["margin"]: r for r in full["curve"]}
    assert curve[0.2]["gold_kept"] == pytest.approx(0.5) and curve[1.5]["candidates_kept"] == 1.0
    with pytest.raises(Exception, match="answerable"):
        C.fit_margin([], [])


def test_gate_keeps_a_model_below_the_floor_off():
    """The red team's case: a model whose held-out balanced accuracy is below chance (40%) must
    not be switched on; one that adds to the floor is."""
    y = [True] * 5 + [False] * 5
    floor = [False, False, False, False, True, True, True, True, False, False]  # BA 0.7
    bad = [True, True, True, False, False, False, False, False, True, True]  # 40%: worse than chance
    g = C.gate_decision(y, floor, bad)
    assert g["enabled"] is False and g["model_balanced_accuracy"] == pytest.approx(0.4)
    assert g["floor_balanced_accuracy"] == pytest.approx(0.7) and "left off" in g["reason"]
    good = [False] * 5 + [False, False, False, True, True]  # catches the two the floor misses
    g = C.gate_decision(y, floor, good)
    assert g["enabled"] is True and g["combined_balanced_accuracy"] > g["floor_balanced_accuracy"]
    assert "switched on" in g["reason"]
    # a gain below min_gain (SQuAD by paragraph: 64.5% against 64.4%) is noise: left off
    g = C.gate_decision(y, floor, good, min_gain=0.25)
    assert g["enabled"] is False and "by 25 point(s)" in g["reason"]


def test_floor_scores_are_the_rankers_top():
    """The not-found floor is compared with the ranker's best score, before re-scoring."""
    from docket.eval.dataset import Item, LabelledSet
    from docket.eval.runner import prepare

    def ch(i, t, title=""):
        return parse_chunk({"id": i, "doc": i, "text": t, "title": title})

    lset = LabelledSet("s", [Item("q", "Where does the Rhine flow?",
                                  [ch("a", "The Rhine flows into the North Sea.", "Rhine"), ch("b", "Apples are red.")])])
    prepared = prepare(lset, HashEmbedder())
    assert C.floor_scores(prepared) == [prepared[0].query.ranked[0].score]
