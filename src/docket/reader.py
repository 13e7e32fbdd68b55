"""A reader for answerability without an LLM call: does this pool answer this question?

A small model over features of the question and its ranked pool (no text generation, numpy
only): the dense scores (best cosine, its lead, the mean of the best three, the best against the
pool's mean), keyword evidence (the rarity-weighted share of the question's words in the best
passage, in the best three, in any one passage, in one sentence, and absent from the whole
pool; a BM25 of the best passage normalised by its ceiling), the question's names and numbers
found in the best passages, whether the dense and the keyword best agree, and the question's
length. The weights are built by benchmarks/train_reader.py from ../shared/data (SQuAD 2.0
train, HotpotQA and MuSiQue pools with and without their gold paragraphs) and shipped in
docket/data/answerable_reader.json with the embedder they were trained for: the dense
features are that embedder's cosines, so another embedder does not get this reader.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from docket.text import STOPWORDS, loose_sentences

FEATURES = ("top", "gap", "mean3", "lift", "cov_best", "cov_top3", "cov_max", "sent_cov", "missing", "bm25_best",
            "ent_cov", "num_missing", "agree", "q_len", "rare_absent", "neg_diff")

_SUFFIXES = ("ing", "ed", "es", "s")
_NAME = re.compile(r"(?<!^)(?<![.?!]\s)\b[A-Z][\w'-]+")
_NUMBER = re.compile(r"\b\d[\d,.]*\b")
_NEGATION = re.compile(r"\b(?:not|never|no|none|nor|without|n't|cannot)\b|n't\b", re.IGNORECASE)


_TOKEN = re.compile(r"[^\W_]+")


@lru_cache(maxsize=1 << 16)
def _stem(w: str) -> str:
    for suf in _SUFFIXES:
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            return w[: -len(suf)]
    return w


@lru_cache(maxsize=1 << 12)
def _bag(text: str) -> tuple[str, ...]:
    """The text's lower-cased word tokens, suffix-stripped (a pool's chunks recur from question
    to question, so each text is read once)."""
    return tuple(map(_stem, _TOKEN.findall(text.lower())))


def _question_words(question: str) -> list[str]:
    return list(dict.fromkeys(_stem(w) for w in _TOKEN.findall(question.lower()) if w not in STOPWORDS))


def features(question: str, texts: Sequence[str], cosines: Sequence[float]) -> np.ndarray:
    """The feature vector (FEATURES order) of one question and its pool: `texts` are the
    candidates' title + text, `cosines` their dense scores from the reader's embedder."""
    n = len(texts)
    if n == 0:
        return np.zeros(len(FEATURES))
    cos = np.asarray(cosines, dtype=float)
    order = np.argsort(-cos, kind="stable")
    sc = cos[order]
    bags = [_bag(t) for t in texts]
    sets = [set(b) for b in bags]
    df: dict[str, int] = {}
    for s in sets:
        for w in s:
            df[w] = df.get(w, 0) + 1
    unseen = math.log(1 + (n + 1) / 0.5)

    def idf(w: str) -> float:
        d = df.get(w)
        return unseen if d is None else math.log(1 + (n + 1) / (d + 0.5))

    q = _question_words(question)
    wq = np.array([idf(w) for w in q]) if q else np.zeros(0)
    total = float(wq.sum()) or 1.0

    def cover(s: set[str]) -> float:
        return float(sum(x for w, x in zip(q, wq) if w in s)) / total if q else 0.0

    covs = np.array([cover(s) for s in sets])
    best = int(order[0])
    top3 = [int(i) for i in order[:3]]
    union: set[str] = set().union(*(sets[i] for i in top3))
    pool: set[str] = set().union(*sets)
    sent_cov, best_sent = 0.0, texts[best]
    for i in top3:
        for sent in loose_sentences(texts[i]):
            if len(sent.split()) >= 3:
                c = cover(set(_bag(sent)))
                if c > sent_cov:
                    sent_cov, best_sent = c, sent
    # the rarest question word the best sentence lacks (a swapped name or term), over the ceiling
    in_sent = set(_bag(best_sent))
    rare_absent = max((x for w, x in zip(q, wq) if w not in in_sent), default=0.0) / unseen
    neg_diff = float(bool(_NEGATION.search(question)) != bool(_NEGATION.search(best_sent)))
    # BM25 of the best passage (k1 1.2, b 0.75 over the pool's lengths), over its ceiling
    lens = np.array([len(b) for b in bags], dtype=float)
    avg = float(lens.mean()) or 1.0
    tf: dict[str, int] = {}
    for w in bags[best]:
        tf[w] = tf.get(w, 0) + 1
    k1, b = 1.2, 0.75
    norm = k1 * (1 - b + b * lens[best] / avg)
    bm = sum(x * tf[w] * (k1 + 1) / (tf[w] + norm) for w, x in zip(q, wq) if w in tf)
    bm25_best = bm / (total * (k1 + 1)) if q else 0.0
    names = {_stem(w) for m in _NAME.findall(question) for w in _TOKEN.findall(m.lower())}
    nums = set(_NUMBER.findall(question))
    top_text = " ".join(texts[i] for i in top3)
    ent_cov = (sum(1 for w in names if w in union) / len(names)) if names else 1.0
    num_missing = float(any(x not in top_text for x in nums))
    return np.array([
        sc[0],
        sc[0] - (sc[1] if n > 1 else 0.0),
        float(sc[:3].mean()),
        sc[0] - float(sc.mean()),
        covs[best],
        cover(union),
        float(covs.max()),
        sent_cov,
        1.0 - cover(pool),
        bm25_best,
        ent_cov,
        num_missing,
        float(int(np.argmax(covs)) == best),
        min(len(q), 20) / 10.0,
        rare_absent,
        neg_diff,
    ])


@dataclass(frozen=True)
class Reader:
    """A one-hidden-layer network (or, with no hidden layer, a logistic regression) on
    standardised features: P(answerable) = sigmoid(w2 . relu(W1 z + b1) + b2)."""

    embedder: str
    mean: np.ndarray
    scale: np.ndarray
    w1: np.ndarray | None
    b1: np.ndarray | None
    w2: np.ndarray
    b2: float
    threshold: float
    meta: dict[str, Any]

    def probability(self, x: np.ndarray) -> np.ndarray:
        z = (np.atleast_2d(x) - self.mean) / self.scale
        h = np.maximum(z @ self.w1.T + self.b1, 0.0) if self.w1 is not None and self.b1 is not None else z
        logit = np.clip(h @ self.w2 + self.b2, -50, 50)
        return 1.0 / (1.0 + np.exp(-logit))

    def to_json(self) -> dict[str, Any]:
        return {"embedder": self.embedder, "features": list(FEATURES), "mean": self.mean.tolist(),
                "scale": self.scale.tolist(), "w1": None if self.w1 is None else self.w1.tolist(),
                "b1": None if self.b1 is None else self.b1.tolist(), "w2": self.w2.tolist(), "b2": self.b2,
                "threshold": self.threshold, "meta": self.meta}

    @classmethod
    def of(cls, d: dict[str, Any]) -> Reader:
        if list(d["features"]) != list(FEATURES):
            raise ValueError(f"reader features {d['features']} differ from this docket's {list(FEATURES)}")
        arr = np.asarray
        return cls(d["embedder"], arr(d["mean"], float), arr(d["scale"], float),
                   None if d["w1"] is None else arr(d["w1"], float), None if d["b1"] is None else arr(d["b1"], float),
                   arr(d["w2"], float), float(d["b2"]), float(d["threshold"]), dict(d.get("meta", {})))


@lru_cache(maxsize=1)
def shipped() -> Reader | None:
    """The reader docket ships (None when the file is absent: the gate falls back to floors)."""
    f = resources.files("docket").joinpath("data/answerable_reader.json")
    if not f.is_file():
        return None
    return Reader.of(json.loads(f.read_text(encoding="utf-8")))


def reader_for(embedder_name: str | None) -> Reader | None:
    """The shipped reader when it was trained on this embedder's cosines, else None."""
    r = shipped()
    return r if r is not None and embedder_name is not None and r.embedder == embedder_name else None
