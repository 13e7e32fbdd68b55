"""A reader for answerability without an LLM call: does this pool answer this question?

A logistic regression over features of the question and its ranked pool (no text generation,
numpy only; FEATURES): the dense scores (best cosine, its lead over the next and the next five,
over the pool's mean), keyword evidence (the rarity-weighted share of the question's words in
the best passage, the best two and three, any one passage, the best sentence and two sentences,
absent from the pool; BM25 of the best passage and the best of the top ten), the question's
names found as phrases in the best passages, the pool and the best titles, the answer type (a
"when" question needs a date in the best sentence, "how many" a quantity, "who"/"where" a name
the question does not give), negation, the question's word pairs in the best sentence, a
question word whose opposite the best sentence has instead ("northward" asked, "southward"
written: the swap SQuAD 2.0 writes many unanswerable questions by), and for a comparison ("Are X
and Y both ...?") whether every compared name is among the best titles. Words
that name a date ("in 2024", "last year": docket.dates) are left out of the question's words,
names and numbers: the versions move answers them, and the passages in force then need not
write the year. The weights are built by benchmarks/train_reader.py from ../shared/data (SQuAD 2.0 train, HotpotQA
and MuSiQue pools with and without their gold paragraphs, and off topic) and shipped in
docket/data/answerable_reader.json with the embedder they were trained for: the dense features
are that embedder's cosines, so another embedder does not get this reader.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence, Set
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from docket.dates import find_dates
from docket.text import STOPWORDS, loose_sentences

FEATURES = ("top", "gap", "mean3", "lift", "margin5", "cov_best", "cov_top2", "cov_top3", "cov_max", "sent_cov",
            "sent_cov2", "missing", "bm25_best", "bm25_max", "ent_cov", "ent_pool", "title_hit", "num_missing",
            "agree", "q_len", "rare_absent", "rare_absent_top", "neg_diff", "bigram", "type_known", "type_hit",
            "type_hit_top3", "cos_of_cov_max", "antonym", "comp_title")

_SUFFIXES = ("ing", "ed", "es", "s")
_TOKEN = re.compile(r"[^\W_]+")
#: a name in the question: capitalised words or numbers in a row ("Arthur's Magazine", "Tour de France")
_NAME_PHRASE = re.compile(r"(?:[A-Z][\w'.-]*|\d[\d,.]*)(?:\s+(?:(?:of|the|de|von|and|&)\s+)?(?:[A-Z][\w'.-]*|\d[\d,.]*))*")
_NUMBER = re.compile(r"\b\d[\d,.]*\b")
_RUNS = re.compile(r"\d+|[^\W\d_]+")
_YEAR = re.compile(r"\b(?:1[0-9]{3}|20[0-9]{2})s?\b")
_DATE_WORD = re.compile(r"\b(?:January|February|March|April|May|June|July|August|September|October|November|"
                        r"December|century|centuries)\b", re.IGNORECASE)
_QUANTITY = re.compile(r"\b(?:\d[\d,.]*|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|"
                       r"forty|fifty|hundred|thousand|million|billion|dozen|half|several)\b", re.IGNORECASE)
_CAPITALISED = re.compile(r"(?<![.?!]\s)(?<!^)\b[A-Z][a-z][\w'-]*")
_NEGATION = re.compile(r"\b(?:not|never|no|none|nor|without|cannot)\b|n't\b", re.IGNORECASE)
#: the answer a question asks for, by its wording (first match wins): a quantity, a date, a person, a place
_ANSWER_TYPES = (
    ("num", re.compile(r"\b(?:how (?:many|much|long|old|far|large|big|tall|high|often)|what (?:percentage|percent|"
                       r"number|amount|proportion))\b")),
    ("when", re.compile(r"\b(?:when|what year|which year|what century|what decade|what date|what time|what period)\b")),
    ("who", re.compile(r"\b(?:who|whom|whose)\b")),
    ("where", re.compile(r"\b(?:where|what (?:city|country|place|state|region|river|town))\b")),
)
#: opposites: a question that asks about the "northward" extension of a passage's "southward" one
#: (SQuAD 2.0's authors wrote a fifth of its unanswerable questions by such an antonym swap); a
#: fixed list of common pairs, not mined from any data set
_OPPOSITES = (("north", "south"), ("east", "west"), ("northern", "southern"), ("eastern", "western"),
              ("upper", "lower"), ("first", "last"), ("most", "least"), ("before", "after"), ("increase", "decrease"),
              ("largest", "smallest"), ("highest", "lowest"), ("earliest", "latest"), ("begin", "end"), ("start", "end"),
              ("maximum", "minimum"), ("more", "less"), ("more", "fewer"), ("early", "late"), ("high", "low"),
              ("large", "small"), ("old", "new"), ("older", "newer"), ("oldest", "newest"), ("longest", "shortest"),
              ("long", "short"), ("best", "worst"), ("win", "lose"), ("won", "lost"), ("inner", "outer"),
              ("major", "minor"), ("positive", "negative"), ("rise", "fall"), ("above", "below"),
              ("front", "back"), ("top", "bottom"), ("success", "failure"), ("private", "public"),
              ("internal", "external"), ("import", "export"), ("ancient", "modern"), ("allow", "forbid"),
              ("accept", "reject"))
_OPPOSITE: dict[str, tuple[str, ...]] = {}
for _a, _b in _OPPOSITES:
    _OPPOSITE[_a] = (*_OPPOSITE.get(_a, ()), _b)
    _OPPOSITE[_b] = (*_OPPOSITE.get(_b, ()), _a)
#: the longest root first ("lowest" before "low"), so a word is read by its own pair
_ROOTS = tuple(sorted(_OPPOSITE, key=len, reverse=True))
#: a comparison of two named things ("Are X and Y both ...?", "Which is older, X or Y?"): both
#: must be in the pool, so their titles are the evidence
_AND = re.compile(r" (?:and|&) ")
_COMPARISON = re.compile(r"^(?:are|is|were|was|do|does|did|which|who)\b.*\b(?:or|both|same|and)\b", re.IGNORECASE)


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


@lru_cache(maxsize=1 << 12)
def _set(bag: tuple[str, ...]) -> frozenset[str]:
    return frozenset(bag)


@lru_cache(maxsize=1 << 12)
def _sentences(text: str) -> tuple[str, ...]:
    return tuple(s for s in loose_sentences(text) if len(s.split()) >= 3) or (text,)


#: any fixed day: only which words of the question name a date matters here, not the period
_SOME_DAY = date(2026, 1, 1)


@lru_cache(maxsize=1 << 12)
def _dated(question: str) -> frozenset[str]:
    """The question's words that name a date ("in 2024", "on 1 March 2025", "last year"): the
    versions move answers those, so a pool that never writes the year is not a pool without
    the answer (the pool's passages are the versions in force then)."""
    words = [w for ref in find_dates(question, _SOME_DAY) for w in _TOKEN.findall(ref.text.lower())]
    # and their digit and letter runs: "1st" holds the "1" a name phrase reads, "2024年" the "2024"
    return frozenset(words + [p for w in words for p in _RUNS.findall(w)])


def forget() -> None:
    """Empty the per-text caches (benchmarks measure a pool at first sight with it)."""
    for cache in (_bag, _set, _sentences, _dated):
        cache.cache_clear()


def answer_type(question: str) -> str | None:
    """What the question asks for: "num", "when", "who", "where", or None (no type to check)."""
    low = question.lower()
    return next((name for name, rx in _ANSWER_TYPES if rx.search(low)), None)


def _type_hit(kind: str | None, sentence: str, asked: set[str]) -> float:
    """1 when the sentence holds something of the asked type that the question does not already
    name (a year for "when", a quantity for "how many", a name for "who"/"where")."""
    if kind == "when":
        return float(bool(_YEAR.search(sentence) or _DATE_WORD.search(sentence)))
    if kind == "num":
        return float(any(m.group(0).lower() not in asked for m in _QUANTITY.finditer(sentence)))
    if kind in ("who", "where"):
        return float(any(_stem(m.group(0).lower()) not in asked for m in _CAPITALISED.finditer(sentence)))
    return 1.0


def _swapped(question: str, sentence: str) -> float:
    """1 when a question word the sentence lacks has its opposite there, same affixes ("northward"
    asked, "southward" written): the sentence answers another question."""
    have = set(_TOKEN.findall(sentence.lower()))
    stems = {_stem(w) for w in have}
    for w in _TOKEN.findall(question.lower()):
        if w in have:
            continue
        root = next((a for a in _ROOTS if w.startswith(a) and len(w) - len(a) <= 4), None)
        if root is not None and any((v := w.replace(root, b, 1)) in have or _stem(v) in stems for b in _OPPOSITE[root]):
            return 1.0
    return 0.0


class _Pool:
    """One question against one pool: the rarity weights (idf over the pool) of the question's
    content words, and the weighted share of them a set of words covers."""

    def __init__(self, question: str, bags: list[tuple[str, ...]]) -> None:
        n = len(bags)
        self.sets = [_set(b) for b in bags]
        self.unseen = math.log(1 + (n + 1) / 0.5)
        dated = _dated(question)
        self.tokens = [w for w in _TOKEN.findall(question.lower()) if w not in dated]
        self.q = list(dict.fromkeys(_stem(w) for w in self.tokens if w not in STOPWORDS))
        self.asked = set(self.q) | set(self.tokens)
        # document frequencies of the question's words only: the rest of the pool's words weigh nothing
        self.df = [sum(1 for s in self.sets if w in s) for w in self.q]
        self.w = [math.log(1 + (n + 1) / (d + 0.5)) if d else self.unseen for d in self.df]
        self.total = sum(self.w) or 1.0

    def cover(self, words: Set[str]) -> float:
        return sum(x for w, x in zip(self.q, self.w) if w in words) / self.total

    def pool_cover(self) -> float:
        """The weighted share of the question's words found somewhere in the pool."""
        return sum(x for d, x in zip(self.df, self.w) if d) / self.total

    def rarest_absent(self, words: Set[str]) -> float:
        """The rarest question word the words lack (a swapped name or term), over the ceiling."""
        return max((x for w, x in zip(self.q, self.w) if w not in words), default=0.0) / self.unseen

    def bm25(self, bag: tuple[str, ...], avg_len: float, k1: float = 1.2, b: float = 0.75) -> float:
        """BM25 of one passage over its ceiling (every question word present, once)."""
        tf: dict[str, int] = {}
        for w in bag:
            tf[w] = tf.get(w, 0) + 1
        norm = k1 * (1 - b + b * len(bag) / avg_len)
        s = sum(x * tf[w] * (k1 + 1) / (tf[w] + norm) for w, x in zip(self.q, self.w) if w in tf)
        return s / (self.total * (k1 + 1)) if self.q else 0.0


def _names(question: str, texts: Sequence[str], top: list[int], titles: Sequence[str] | None) -> tuple[float, ...]:
    """The question's names (capitalised phrases after its first word) found as phrases: in the
    best three passages, anywhere in the pool, and in the titles of the best five (0.5 when the
    pool has no titles); and whether a number of the question is missing from the best three."""
    dated = _dated(question)
    phrases = [m.group(0).lower() for m in _NAME_PHRASE.finditer(question) if m.start() > 0]
    phrases = [p for p in phrases if p not in STOPWORDS and not set(_TOKEN.findall(p)) <= dated]
    best = " ".join(texts[i] for i in top[:3]).lower()
    num_missing = float(any(x not in best for x in _NUMBER.findall(question) if x.lower() not in dated))
    if not phrases:
        return 1.0, 1.0, 0.5, num_missing
    pool = " ".join(texts).lower()
    heads = [titles[i].lower() for i in top[:5] if titles[i]] if titles is not None else []
    title_hit = sum(1 for p in phrases if any(p in t or t in p for t in heads)) / len(phrases) if heads else 0.5
    return (sum(1 for p in phrases if p in best) / len(phrases), sum(1 for p in phrases if p in pool) / len(phrases),
            title_hit, num_missing)


def _compared_titles(question: str, top: list[int], titles: Sequence[str] | None) -> float:
    """For a comparison question ("Are Local H and For Against both ...?"), 1 when every name it
    compares (the capitalised phrases after its first word, "and" parting two names) is in a title
    of the best ten or holds one, else 0; 0.5 when it is no comparison or there are no names or
    titles (no evidence either way)."""
    heads = [titles[i].lower() for i in top[:10] if titles[i]] if titles is not None else []
    parts = question.split(maxsplit=1)
    if not heads or len(parts) < 2 or not _COMPARISON.search(question):
        return 0.5
    dated = _dated(question)
    names = [x for m in _NAME_PHRASE.finditer(parts[1]) for x in _AND.split(m.group(0).lower())]
    names = [x for x in names if x not in STOPWORDS and not set(_TOKEN.findall(x)) <= dated]
    if not names:
        return 0.5
    return float(all(any(x in t or t in x for t in heads) for x in names))


def features(question: str, texts: Sequence[str], cosines: Sequence[float],
             titles: Sequence[str] | None = None) -> np.ndarray:
    """The feature vector (FEATURES order) of one question and its pool: `texts` are the
    candidates' title + text, `cosines` their dense scores from the reader's embedder, `titles`
    their titles alone (None: no titles)."""
    n = len(texts)
    if n == 0:
        return np.zeros(len(FEATURES))
    cos = np.asarray(cosines, dtype=float)
    order = [int(i) for i in np.argsort(-cos, kind="stable")]
    sc = cos[order]
    bags = [_bag(t) for t in texts]
    P = _Pool(question, bags)
    covs = np.array([P.cover(s) for s in P.sets])
    best = order[0]
    u2, u3 = P.sets[best].union(*(P.sets[i] for i in order[1:2])), P.sets[best].union(*(P.sets[i] for i in order[1:3]))
    sents = sorted(((P.cover(_set(_bag(s))), s) for i in order[:3] for s in _sentences(texts[i])),
                   key=lambda t: -t[0])
    sent_cov, best_sent = sents[0]
    in_sent = _set(_bag(best_sent))
    sent_cov2 = P.cover(in_sent | _set(_bag(sents[1][1]))) if len(sents) > 1 else sent_cov
    avg = sum(len(b) for b in bags) / n or 1.0
    # the question's word pairs (stemmed, not two stopwords) in the best sentence, in order
    pairs = [p for p in zip(map(_stem, P.tokens), map(_stem, P.tokens[1:])) if not (p[0] in STOPWORDS and p[1] in STOPWORDS)]
    sb = _bag(best_sent)
    in_pairs = set(zip(sb, sb[1:]))
    kind = answer_type(question)
    ent_cov, ent_pool, title_hit, num_missing = _names(question, texts, order, titles)
    imax = int(np.argmax(covs))
    rest = sc[1:6]
    return np.array([
        sc[0], sc[0] - (sc[1] if n > 1 else 0.0), float(sc[:3].mean()), sc[0] - float(sc.mean()),
        sc[0] - (float(rest.mean()) if len(rest) else 0.0),
        covs[best], P.cover(u2), P.cover(u3), float(covs.max()), sent_cov, sent_cov2,
        1.0 - P.pool_cover(),
        P.bm25(bags[best], avg), max(P.bm25(bags[i], avg) for i in order[:10]),
        ent_cov, ent_pool, title_hit, num_missing,
        float(imax == best), min(len(P.q), 20) / 10.0, P.rarest_absent(in_sent), P.rarest_absent(u3),
        float(bool(_NEGATION.search(question)) != bool(_NEGATION.search(best_sent))),
        sum(1 for p in pairs if p in in_pairs) / len(pairs) if pairs else 0.0,
        float(kind is not None), _type_hit(kind, best_sent, P.asked),
        max(_type_hit(kind, s, P.asked) for _, s in sents[:3]), float(cos[imax]), _swapped(question, best_sent),
        _compared_titles(question, order, titles),
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

    @property
    def min_pool(self) -> int:
        """The smallest pool it was trained on (smaller pools: the rule gate decides)."""
        return int(self.meta.get("min_pool", 1))

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


def reader_for(embedder_name: str | None, pool: int | None = None) -> Reader | None:
    """The shipped reader when it was trained on this embedder's cosines (and, given `pool`, on
    pools at least that small), else None."""
    r = shipped()
    if r is None or embedder_name is None or r.embedder != embedder_name:
        return None
    return r if pool is None or pool >= r.min_pool else None
