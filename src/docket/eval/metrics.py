"""Metrics of the assembly step, each a small pure function with hand-checked tests.

Definitions (docs/eval.md):

- gold in prompt: ALL of a question's gold chunks reach the final prompt *in full* (their whole
  text, whitespace-normalised, appears in one unit of the prompt). A chunk cut by a splitter or
  compressed does not count. Questions without gold are left out.
- gold recall: the share of a question's gold chunks that reach the prompt in full.
- tokens: evidence (the documents block, as the system would send it) and total prompt.
- duplicate share: the share of prompts holding two units whose vectors' cosine is at or
  above the duplicate threshold.
- "not found": the positive class is "the set says this question is unanswerable".
"""

from __future__ import annotations

import html
import math
import re
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

_WS = re.compile(r"\s+")


def norm_text(text: str) -> str:
    """Whitespace-collapsed text with XML entities undone (docket escapes & < > in the prompt)."""
    return _WS.sub(" ", html.unescape(text)).strip()


def gold_found(gold_texts: Sequence[str], units: Sequence[str]) -> list[bool]:
    """For each gold text: is it wholly inside one of the prompt's units?"""
    normed = [norm_text(u) for u in units]
    return [any(norm_text(g) in u for u in normed) for g in gold_texts]


def gold_in_prompt(gold_texts: Sequence[str], units: Sequence[str]) -> bool | None:
    """True when every gold text is wholly in the prompt; None when there is no gold."""
    if not gold_texts:
        return None
    return all(gold_found(gold_texts, units))


def gold_recall(gold_texts: Sequence[str], units: Sequence[str]) -> float | None:
    if not gold_texts:
        return None
    hits = gold_found(gold_texts, units)
    return sum(hits) / len(hits)


def mean(xs: Iterable[float | None]) -> float | None:
    vals = [float(x) for x in xs if x is not None]
    return sum(vals) / len(vals) if vals else None


def percentile(xs: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (the value at or below which q% of the observations fall)."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    k = max(1, math.ceil(q / 100.0 * len(s)))
    return float(s[k - 1])


def cost_per_1000(mean_tokens: float, usd_per_million: float) -> float:
    """USD for 1,000 queries whose prompts average `mean_tokens` input tokens."""
    return 1000.0 * mean_tokens * usd_per_million / 1e6


def has_duplicate_pair(vectors: np.ndarray, threshold: float) -> bool:
    """Does any pair of unit vectors (rows) reach the cosine threshold?"""
    n = len(vectors)
    if n < 2:
        return False
    sims = vectors @ vectors.T
    iu = np.triu_indices(n, k=1)
    return bool((sims[iu] >= threshold - 1e-9).any())


@dataclass(frozen=True)
class Binary:
    """Confusion counts for a yes/no decision ("not found" is the positive class here)."""

    tp: int
    fp: int
    tn: int
    fn: int

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def specificity(self) -> float | None:
        return self.tn / (self.tn + self.fp) if self.tn + self.fp else None

    @property
    def accuracy(self) -> float | None:
        n = self.tp + self.fp + self.tn + self.fn
        return (self.tp + self.tn) / n if n else None

    @property
    def balanced_accuracy(self) -> float | None:
        r, s = self.recall, self.specificity
        if r is None or s is None:
            return None
        return (r + s) / 2

    @property
    def f1(self) -> float | None:
        p, r = self.precision, self.recall
        if not p or not r:
            return 0.0 if (p is not None and r is not None) else None
        return 2 * p * r / (p + r)

    def to_json(self) -> dict[str, float | int | None]:
        return {
            "tp": self.tp, "fp": self.fp, "tn": self.tn, "fn": self.fn,
            "precision": self.precision, "recall": self.recall,
            "balanced_accuracy": self.balanced_accuracy, "accuracy": self.accuracy,
        }


def confusion(predicted: Sequence[bool], actual: Sequence[bool]) -> Binary:
    """predicted/actual: True = positive (e.g. "not found")."""
    if len(predicted) != len(actual):
        raise ValueError("predicted and actual differ in length")
    tp = sum(1 for p, a in zip(predicted, actual) if p and a)
    fp = sum(1 for p, a in zip(predicted, actual) if p and not a)
    tn = sum(1 for p, a in zip(predicted, actual) if not p and not a)
    fn = sum(1 for p, a in zip(predicted, actual) if not p and a)
    return Binary(tp, fp, tn, fn)


def auc(scores: Sequence[float], positive: Sequence[bool]) -> float | None:
    """Area under the ROC curve: the chance a random positive outscores a random negative
    (ties count half). Higher score = more likely positive."""
    pos = [s for s, y in zip(scores, positive) if y]
    neg = [s for s, y in zip(scores, positive) if not y]
    if not pos or not neg:
        return None
    allv = np.asarray(list(pos) + list(neg), dtype=float)
    order = allv.argsort(kind="mergesort")
    ranks = np.empty(len(allv))
    sorted_v = allv[order]
    i = 0
    while i < len(sorted_v):  # average ranks over ties
        j = i
        while j + 1 < len(sorted_v) and sorted_v[j + 1] == sorted_v[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    r_pos = ranks[: len(pos)].sum()
    return float((r_pos - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def best_threshold(scores: Sequence[float], positive: Sequence[bool]) -> tuple[float, float]:
    """The cut t maximising balanced accuracy of `score >= t -> positive`; returns (t, bal.acc)."""
    cands = sorted(set(scores))
    best = (cands[0] if cands else 0.0, -1.0)
    for t in cands:
        b = confusion([s >= t for s in scores], positive).balanced_accuracy or 0.0
        if b > best[1]:
            best = (t, b)
    return best


# --- answers --------------------------------------------------------------------------------

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def norm_answer(s: str) -> str:
    """SQuAD's normalisation: lower case, no punctuation, no articles, single spaces."""
    s = s.lower().translate(_PUNCT)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def answer_matches(answer: str, references: Sequence[str]) -> bool:
    """Reference string match: some normalised reference occurs in the normalised answer."""
    a = f" {norm_answer(answer)} "
    return any(norm_answer(r) and f" {norm_answer(r)} " in a for r in references)


_REFUSAL = re.compile(
    r"(do not know|don't know|cannot find|could not find|couldn't find|can't find|not (?:found|mentioned|provided|"
    r"stated|specified|available|contain)|no information|(?:does|do) not (?:say|mention|contain|provide|specify|state)|"
    r"(?:doesn't|don't) (?:say|mention|contain|provide|specify|state)|unable to (?:find|answer|determine)|insufficient|"
    r"not enough information|unknown)",
    re.I,
)


def is_refusal(answer: str, refusal: str | None = None) -> bool:
    """Does the answer decline ("I do not know from the provided sources", "not mentioned", ...)?"""
    if refusal and norm_answer(refusal) in norm_answer(answer):
        return True
    return bool(_REFUSAL.search(answer))
