"""Metrics on tiny, hand-checked cases (each one can fail)."""

from __future__ import annotations

import numpy as np
import pytest

from docket.eval import metrics as M


def test_gold_in_prompt_needs_every_gold_chunk_whole():
    units = ["Alpha beta gamma.", "Delta  epsilon\nzeta."]
    assert M.gold_in_prompt(["Alpha beta gamma."], units) is True
    # whitespace differences do not matter
    assert M.gold_in_prompt(["Delta epsilon zeta."], units) is True
    # both needed, one missing
    assert M.gold_in_prompt(["Alpha beta gamma.", "Eta theta."], units) is False
    # a gold chunk cut in half (a splitter's piece) does not count
    assert M.gold_in_prompt(["Alpha beta gamma. Delta"], ["Alpha beta gamma.", "Delta"]) is False
    # no gold: not counted at all
    assert M.gold_in_prompt([], units) is None


def test_gold_in_prompt_sees_through_xml_escaping():
    assert M.gold_in_prompt(["Fees & <charges>"], ["Fees &amp; &lt;charges&gt;"]) is True


def test_gold_recall_is_the_share_found():
    units = ["one two", "three four"]
    assert M.gold_recall(["one two", "five"], units) == 0.5
    assert M.gold_recall(["five", "six", "three four"], units) == pytest.approx(1 / 3)
    assert M.gold_recall([], units) is None


def test_mean_skips_none():
    assert M.mean([True, False, None, True]) == pytest.approx(2 / 3)
    assert M.mean([None]) is None


def test_percentile_nearest_rank():
    xs = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100]
    assert M.percentile(xs, 50) == 50
    assert M.percentile(xs, 95) == 100
    assert M.percentile(xs, 90) == 90
    assert M.percentile([7], 95) == 7


def test_cost_per_1000():
    # 1,000 queries x 500 tokens at USD 3 per million = USD 1.50
    assert M.cost_per_1000(500, 3.0) == pytest.approx(1.5)


def test_duplicate_pair():
    a = np.array([1.0, 0.0])
    b = np.array([0.96, np.sqrt(1 - 0.96**2)])
    c = np.array([0.0, 1.0])
    assert M.has_duplicate_pair(np.stack([a, b]), 0.95) is True
    assert M.has_duplicate_pair(np.stack([a, c]), 0.95) is False
    assert M.has_duplicate_pair(np.stack([a, b]), 0.97) is False
    assert M.has_duplicate_pair(np.stack([a]), 0.5) is False


def test_confusion_and_balanced_accuracy():
    # positive = "not found"; 3 real positives, 5 real negatives
    pred = [True, True, False, True, False, False, False, False]
    act = [True, True, True, False, False, False, False, False]
    cm = M.confusion(pred, act)
    assert (cm.tp, cm.fp, cm.tn, cm.fn) == (2, 1, 4, 1)
    assert cm.precision == pytest.approx(2 / 3)
    assert cm.recall == pytest.approx(2 / 3)
    assert cm.specificity == pytest.approx(4 / 5)
    assert cm.balanced_accuracy == pytest.approx((2 / 3 + 4 / 5) / 2)
    assert cm.accuracy == pytest.approx(6 / 8)
    with pytest.raises(ValueError):
        M.confusion([True], [True, False])


def test_auc_with_ties():
    assert M.auc([0.9, 0.8, 0.1, 0.2], [True, True, False, False]) == 1.0
    assert M.auc([0.1, 0.2, 0.9, 0.8], [True, True, False, False]) == 0.0
    # one tie between a positive and a negative counts half: pairs (p,n): (.5,.5)=.5, (.5,.1)=1, (.9,.5)=1, (.9,.1)=1
    assert M.auc([0.5, 0.9, 0.5, 0.1], [True, True, False, False]) == pytest.approx(3.5 / 4)
    assert M.auc([0.5], [True]) is None


def test_best_threshold():
    t, b = M.best_threshold([0.1, 0.2, 0.7, 0.8], [False, False, True, True])
    assert t == 0.7 and b == 1.0


def test_answer_match_squad_normalisation():
    assert M.answer_matches("It was the Chief of Protocol.", ["Chief of Protocol"])
    assert M.answer_matches("France!", ["france"])
    assert not M.answer_matches("Francesca", ["France"])  # whole words only
    assert not M.answer_matches("Germany", ["France"])
    assert not M.answer_matches("anything", [""])


def test_refusal_detection():
    assert M.is_refusal("I do not know from the provided sources.")
    assert M.is_refusal("The documents do not mention a student discount.")
    assert M.is_refusal("Custom refusal line", refusal="custom refusal line")
    assert not M.is_refusal("Yes, after 30 days you get the unused months back [S1].")
