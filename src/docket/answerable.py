"""Decide "not found" from more than the top cosine.

The top candidate's cosine alone separates answerable from unanswerable questions poorly (on
SQuAD 2.0, whose unanswerable questions are written against on-topic paragraphs, the best single
floor reaches 64%). This module reads a few more signals of the pool:

- top, gap, mean3: the best cosine, its lead over the second, the mean of the best three;
- cov_best, cov_top: the share of the question's content words (weighted by their rarity in
  the pool) found in the best passage / in the best `top_n` passages together;
- sent_cov: the same coverage in the single best-matching sentence of the best passages;
- sent_cos: the best cosine between the question and one sentence of those passages (needs an
  embedder; 0 without one);
- missing: the rarity-weighted share of question words found nowhere in the pool.

A logistic model combines them: P(answerable) = sigmoid(bias + sum(w * signal)). `docket
calibrate` fits the weights on labelled questions and writes them into the policy's
[answerable] section; without weights the decision falls back to the floor on the top score.

The floors belong to the embedder (`floors`): a cosine floor is a number on one embedder's
scale, so the shipped floors (data/presets.toml, [embedders]) apply only to the embedder they
were fitted for, and a floor `docket calibrate` fitted applies only to the embedder it names.
Any other embedder (the hash embedder, a user's own `Embedder`) gets no "not found" gate and no
noise floor until calibrated, and the brief says so once, with the command that fits it.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import compress, repeat
from typing import TYPE_CHECKING, Any

import numpy as np

from docket.context import Context
from docket.embed import Embedder
from docket.model import Candidate
from docket.policy import SIGNALS  # the names the policy checks `answerable.weights` against
from docket.presets import embedder_preset
from docket.text import content_words, loose_sentences, words

if TYPE_CHECKING:
    from docket.model import Chunk
    from docket.policy import Policy

#: what fits the floors for a store's embedder (said wherever the gate is off for want of it)
CALIBRATE_COMMAND = "docket calibrate --db STORE --write policy.toml, then pass --policy policy.toml"



def stem(w: str) -> str:
    """A crude suffix strip so "flows" meets "flow" (no dictionary, no model)."""
    for suf in ("ing", "ed", "es", "s"):
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            return w[: -len(suf)]
    return w


def _words(text: str) -> set[str]:
    return {stem(w) for w in words(text)}


def _idf(pool: Sequence[str]) -> dict[str, float]:
    n = len(pool)
    df: dict[str, int] = {}
    for text in pool:
        for w in _words(text):
            df[w] = df.get(w, 0) + 1
    return {w: math.log(1 + (n + 1) / (d + 0.5)) for w, d in df.items()} | {"": math.log(1 + (n + 1) / 0.5)}


def _coverage(qwords: list[str], text_words: set[str], idf: dict[str, float]) -> float:
    if not qwords:
        return 0.0
    unseen = idf[""]
    total = sum(idf.get(w, unseen) for w in qwords)
    have = sum(idf.get(w, unseen) for w in qwords if w in text_words)
    return have / total if total else 0.0


def sentences(text: str) -> list[str]:
    return [s for s in loose_sentences(text.strip()) if len(s.split()) >= 3] or [text]


def features(
    candidates: Sequence[Candidate],
    question: str,
    *,
    top_n: int = 3,
    embedder: Embedder | None = None,
    qvec: np.ndarray | None = None,
    cosines: Sequence[float] | None = None,
) -> dict[str, float]:
    """The signals of one question's ranked pool (best first)."""
    if not candidates:
        return {k: 0.0 for k in SIGNALS}
    cos = list(cosines) if cosines is not None else [c.score for c in candidates]
    order = sorted(range(len(candidates)), key=lambda i: -cos[i])
    ranked = [candidates[i] for i in order]
    sc = [cos[i] for i in order]
    texts = [f"{c.chunk.title} {c.chunk.text}" for c in ranked]
    idf = _idf(texts)
    q = list(dict.fromkeys(stem(w) for w in content_words(question)))
    best = ranked[:top_n]
    best_words = [_words(f"{c.chunk.title} {c.chunk.text}") for c in best]
    union: set[str] = set().union(*best_words)
    pool_words: set[str] = set().union(*(_words(t) for t in texts))
    sents = [s for c in best for s in sentences(c.chunk.text)]
    sent_cov = max((_coverage(q, _words(s), idf) for s in sents), default=0.0)
    sent_cos = 0.0
    if embedder is not None and sents:
        qv = qvec if qvec is not None else embedder.embed([question])[0]
        sent_cos = float(np.max(embedder.embed(sents) @ qv))
    return {
        "top": sc[0],
        "gap": sc[0] - (sc[1] if len(sc) > 1 else 0.0),
        "mean3": float(np.mean(sc[:3])),
        "cov_best": _coverage(q, best_words[0], idf),
        "cov_top": _coverage(q, union, idf),
        "sent_cov": sent_cov,
        "sent_cos": sent_cos,
        "missing": 1.0 - _coverage(q, pool_words, idf),
    }


def probability(signals: dict[str, float], weights: dict[str, float], bias: float) -> float:
    z = bias + sum(w * signals.get(k, 0.0) for k, w in weights.items())
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))


def judge(candidates: list[Candidate], ctx: Context) -> tuple[bool, dict[str, Any]]:
    pol = ctx.policy.answerable
    if not pol.weights:
        top = max((c.score for c in candidates), default=float("-inf"))
        fl = floors(ctx.policy, _embedder_name(ctx))  # this embedder's (none for one without a known floor)
        floor = fl.not_found if fl.not_found is not None else fl.noise
        return floor is None or top >= floor, {"top_score": top, "model": "floor only (no fitted weights)"}
    cosines = None
    qvec = None
    if ctx.has_vectors():
        qvec = ctx.question_vector()
        cosines = [float(v) for v in ctx.vectors([c.chunk for c in candidates]) @ qvec]
    needs_sent = "sent_cos" in pol.weights and pol.weights["sent_cos"] != 0
    sig = features(candidates, ctx.question, top_n=pol.top_n, embedder=ctx.embedder if needs_sent else None,
                   qvec=qvec, cosines=cosines)
    p = probability(sig, pol.weights, pol.bias)
    return p >= pol.threshold, {"p_answerable": round(p, 4), "threshold": pol.threshold,
                                **{k: round(v, 4) for k, v in sig.items()}}


# --- the floors, per embedder ------------------------------------------------------------------

@dataclass(frozen=True)
class Floors:
    """The two floors one assembly uses. `not_found` None: no not-found gate (either `pack.floor`
    decides alone, or no floor is known for the embedder: then `off` says why). `noise` None: no
    candidate is dropped for its score (the budget and the margin decide)."""

    not_found: float | None
    noise: float | None
    source: str
    off: str | None = None
    #: the shipped floor (not one the user set or fitted): the shipped reader may decide instead
    shipped: bool = False


def floors(policy: Policy, embedder_name: str | None) -> Floors:
    """The floors for scores from the embedder named `embedder_name` (None: unknown)."""
    pack_set = "floor" in policy.pack.model_fields_set
    a = policy.answerable
    preset = embedder_preset(embedder_name)
    noise = policy.pack.floor if pack_set else (preset.noise_floor if preset is not None else None)
    if a.floor is not None:
        if a.embedder is None or a.embedder == embedder_name:
            where = f"answerable.floor, fitted for {a.embedder}" if a.embedder else "answerable.floor"
            return Floors(a.floor, noise, where)
        return Floors(None, noise, "none", off=(
            f"answerable.floor {a.floor} was fitted for embedder {a.embedder!r}, but these scores come from "
            f"{_named(embedder_name)}: the \"not found\" gate is off until it is fitted for this embedder "
            f"({CALIBRATE_COMMAND})"))
    if pack_set:
        return Floors(None, noise, "pack.floor")
    if preset is not None and preset.not_found_floor is not None:
        return Floors(preset.not_found_floor, noise, f"the shipped floor for {preset.name}, chosen on public data",
                      shipped=True)
    return Floors(None, noise, "none", off=(
        f"no \"not found\" floor is known for {_named(embedder_name)} (the shipped floors fit only the embedders "
        f"they were chosen for): the gate is off, every question goes to the model; fit one with {CALIBRATE_COMMAND}"))


def _named(name: str | None) -> str:
    return f"embedder {name!r}" if name else "an unnamed scorer (no embedder given)"


def _embedder_name(ctx: Context) -> str | None:
    return getattr(ctx.embedder, "name", None) if ctx.embedder is not None else None


def _attachments_only(chunks: Sequence[Chunk]) -> bool:
    """The pool is the user's own files: their relevance is not a retrieval score's to judge."""
    return bool(chunks) and all(c.trust == "user-provided" for c in chunks)


# --- the fused evidence: dense, exact identifiers, keywords, titles -----------------------------

#: a question term that names one thing exactly: letters and digits mixed ("LDG-4477", "A320",
#: "ISO-27001"), or a number of five digits or more (an order, a form); years stay ordinary words
_IDENT = re.compile(r"(?<![\w-])(?=[\w./-]*\d)(?=[\w./-]*[A-Za-z])[A-Za-z0-9][\w./-]*[A-Za-z0-9](?![\w-])|(?<![\w-])\d{5,}(?![\w-])")
_QUOTED = re.compile(r"[\"“]([^\"”]{3,80})[\"”]")
#: the share of the question's content words (weighted by rarity in the pool) one candidate must
#: hold for the keyword evidence to count; with it, the dense score need only reach the noise floor
KEYWORD_COVER = 0.75


@dataclass(frozen=True)
class Evidence:
    """What the pool offers for a question, beyond the best cosine: the candidates whose text
    holds one of the question's exact identifiers or quoted phrases, and the best keyword
    coverage (rarity-weighted share of the question's content words in one candidate's title
    and text) with that candidate's score."""

    exact: tuple[str, ...]
    exact_terms: tuple[str, ...]
    keyword: float
    keyword_chunk: str | None
    keyword_score: float

    def numbers(self) -> dict[str, Any]:
        return {"exact_hits": list(self.exact), "exact_terms": list(self.exact_terms),
                "keyword_cover": round(self.keyword, 4), "keyword_chunk": self.keyword_chunk,
                "keyword_score": round(self.keyword_score, 4)}


def exact_terms(question: str) -> list[str]:
    """The question's identifiers and quoted phrases, as written (deduplicated, in order)."""
    terms = [m.group(0) for m in _IDENT.finditer(question)] + [m.group(1).strip() for m in _QUOTED.finditer(question)]
    return list(dict.fromkeys(t for t in terms if t))


@lru_cache(maxsize=1024)
def _term_pattern(term: str) -> re.Pattern[str]:
    """The term as a whole word, any case: compiled once per term (the gate asks it of every
    candidate of every pool, and `re`'s own cache costs a format and a look-up per call)."""
    return re.compile(rf"(?<![\w-]){re.escape(term)}(?![\w-])", flags=re.IGNORECASE)


def _holds(term: str, text: str) -> bool:
    return _term_pattern(term).search(text) is not None


#: the only characters outside ASCII that `re`, ignoring case, matches with an ASCII letter (İ ı ſ K;
#: tests/test_warm_columns.py checks there are no others), written as that letter
_ASCII_LOOKALIKES = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


def _folded(text: str) -> str:
    """The text in lower case, with the ASCII look-alikes as their letter: wherever an ASCII term
    matches it ignoring case, the term's lower case is in this text (character for character)."""
    if not text.isascii() and any(c in text for c in "\u0130\u0131\u017f\u212a"):
        text = text.translate(_ASCII_LOOKALIKES)
    return text.lower()


def _holding(terms: Sequence[str], texts: Sequence[str]) -> list[bool]:
    """`any(_holds(t, text) for t in terms)` for each text, searching only the texts that can hold
    a term: an ASCII term matches a text, ignoring case, only where its lower case is in the text's
    `_folded` form, so those that lack it are not searched (the search, with its look-arounds and
    case folding, costs ~20 us a passage; most texts of a pool hold none of the question's terms)."""
    if not terms:
        return [False] * len(texts)
    lowered = [t.lower() for t in terms if t.isascii()]
    ascii_only = len(lowered) == len(terms)
    out = []
    for text in texts:
        if ascii_only:
            low = _folded(text)
            if not any(t in low for t in lowered):
                out.append(False)
                continue
        out.append(any(_holds(x, text) for x in terms))
    return out


def _chunks_holding(terms: Sequence[str], chunks: Sequence[Chunk], features: Sequence[Any]) -> list[bool]:
    """`_holding(terms, texts)` of each chunk's "title\ntext" (`features`: the chunks' features),
    with each text's `_folded` form kept with its chunk (ChunkFeatures.head_folded): the pool's
    texts are not lower-cased again on every query."""
    lowered = [t.lower() for t in terms if t.isascii()]
    if not terms or len(lowered) != len(terms):
        return _holding(terms, [f"{c.title or ''}\n{c.text}" for c in chunks])
    lows = list(map(_HEAD_FOLDED, features))  # kept already (warm: every one)
    if None in lows:
        lows = [f.head_folded(c, _folded) for c, f in zip(chunks, features)]
    maybe = [False] * len(chunks)
    for t in lowered:  # which texts hold some term's lower case, one C pass per term
        maybe = list(map(operator.or_, maybe, map(operator.contains, lows, repeat(t))))
    out = [False] * len(chunks)
    for k in compress(range(len(chunks)), maybe):
        text = f"{chunks[k].title or ''}\n{chunks[k].text}"
        out[k] = any(_holds(x, text) for x in terms)
    return out


_HEAD_FOLDED = operator.attrgetter("_head_folded")


def evidence(question: str, chunks: Sequence[Chunk], scores: Sequence[float]) -> Evidence:
    """The lexical evidence of the pool (`scores`: each chunk's ranker score)."""
    terms = exact_terms(question)
    texts = [f"{c.title or ''}\n{c.text}" for c in chunks]
    exact = tuple(c.id for c, held in zip(chunks, _holding(terms, texts)) if held)
    q = list(dict.fromkeys(stem(w) for w in content_words(question)))
    best, best_i = 0.0, -1
    if q and chunks:
        idf = _idf(texts)
        for i, t in enumerate(texts):
            cov = _coverage(q, _words(t), idf)
            if cov > best or (cov == best and best_i >= 0 and scores[i] > scores[best_i]):
                best, best_i = cov, i
    return Evidence(exact, tuple(terms), best, chunks[best_i].id if best_i >= 0 else None,
                    float(scores[best_i]) if best_i >= 0 else float("-inf"))


def noise_floor(ctx: Context, ranked: Sequence[tuple[Chunk, float, int]] = ()) -> float:
    """The floor below which a candidate is noise (-inf: none applies). Lowered to the score of a
    candidate that holds one of the question's exact identifiers, so the exact hit reaches the
    gate however low its cosine."""
    chunks = [r[0] for r in ranked]
    if _attachments_only(chunks):
        return float("-inf")
    fl = floors(ctx.policy, _embedder_name(ctx))
    f = fl.noise
    if f is None:
        return float("-inf")
    if fl.shipped and ranked and ctx.policy.answerable.gate and ctx.policy.answerable.reader:
        from docket.reader import reader_for

        if reader_for(_embedder_name(ctx), len(ranked)) is not None:  # the reader decides "not found", not this floor:
            return min(f, max(s for _, s, _ in ranked))  # the best candidate always reaches it
    terms = exact_terms(ctx.question)
    if terms:
        held = _chunks_holding(terms, chunks, [e.features for e in ctx.entries(chunks)])
        hits = [s for (_, s, _), h in zip(ranked, held) if h]
        if hits:
            return min(f, max(hits))
    return f


def clears_not_found(chunks: Sequence[Chunk], retriever_scores: Sequence[float], ctx: Context,
                     pool: Sequence[Candidate] = ()) -> bool:
    """The not-found gate on the pool that cleared the noise floor (`retriever_scores`: each
    chunk's score as the ranker gave it, before re-scoring; `pool`: every candidate, for the
    reader). Traced when it decides "not found" or rescues a pool below the floor."""
    if _attachments_only(chunks):
        ctx.trace.add("answerable", "skip", [], "the candidates are the user's attached files: they are not gated on "
                      "a retrieval score")
        return True
    if not ctx.policy.answerable.gate:
        return True
    fl = floors(ctx.policy, _embedder_name(ctx))
    if fl.not_found is None:
        if fl.off is not None:
            ctx.trace.add("answerable", "off", [], fl.off, embedder=_embedder_name(ctx), command=CALIBRATE_COMMAND)
            ctx.warnings.append(fl.off)
        return True
    best = max(retriever_scores, default=float("-inf"))
    from docket.reader import reader_for

    reader = reader_for(_embedder_name(ctx), len(pool)) if fl.shipped and pool and ctx.policy.answerable.reader else None
    if reader is not None:
        return _read(reader, chunks, retriever_scores, ctx, pool, best)
    if best >= fl.not_found:
        return True
    ev = evidence(ctx.question, chunks, retriever_scores)
    relaxed = fl.noise if fl.noise is not None else fl.not_found
    numbers = {"best": round(best, 4), "floor": fl.not_found, "keyword_floor": relaxed, **ev.numbers()}
    if ev.exact:
        ctx.trace.add("answerable", "found", list(ev.exact), f"the best cosine {best:.4f} is below the not-found floor "
                      f"{fl.not_found}, but {len(ev.exact)} candidate(s) hold the question's exact term(s) "
                      f"{', '.join(ev.exact_terms)}: found", **numbers)
        return True
    if ev.keyword >= KEYWORD_COVER and ev.keyword_score >= relaxed and ev.keyword_chunk is not None:
        ctx.trace.add("answerable", "found", [ev.keyword_chunk], f"the best cosine {best:.4f} is below the not-found "
                      f"floor {fl.not_found}, but one candidate holds {100 * ev.keyword:.0f}% of the question's "
                      f"keywords (>= {100 * KEYWORD_COVER:.0f}%) at cosine {ev.keyword_score:.4f} (>= {relaxed}): found",
                      **numbers)
        return True
    ctx.trace.add("floor", "not_found", [], f"the best candidate's score {best:.4f} (before re-scoring) is below the "
                  f"not-found floor {fl.not_found} ({fl.source}), no candidate holds an exact term of the question, "
                  f"and the best keyword cover is {100 * ev.keyword:.0f}% (< {100 * KEYWORD_COVER:.0f}%, or its cosine "
                  f"below {relaxed}): answer 'not found' without an LLM call", **numbers)
    return False


def _read(reader: Any, chunks: Sequence[Chunk], scores: Sequence[float], ctx: Context, pool: Sequence[Candidate],
          best: float) -> bool:
    """The shipped reader decides (docket.reader), an exact identifier overriding it."""
    from docket.reader import FEATURES
    from docket.reader import features as reader_features

    ev = evidence(ctx.question, chunks, scores)
    x = reader_features(ctx.question, [f"{c.chunk.title or ''}\n{c.chunk.text}" for c in pool], [c.score for c in pool],
                        [c.chunk.title or "" for c in pool])
    p = float(reader.probability(x)[0])
    t = reader.threshold if ctx.policy.answerable.reader_threshold is None else ctx.policy.answerable.reader_threshold
    numbers = {"p_answerable": round(p, 4), "threshold": t, "best": round(best, 4), **ev.numbers(),
               **{f: round(float(v), 4) for f, v in zip(FEATURES, x)}}
    if p >= t:
        return True
    if ev.exact:
        ctx.trace.add("answerable", "found", list(ev.exact), f"the reader gives P(answerable) {p:.3f} (< {t}), "
                      f"but {len(ev.exact)} candidate(s) hold the question's exact term(s) {', '.join(ev.exact_terms)}: found",
                      **numbers)
        return True
    ctx.trace.add("floor", "not_found", [], f"the answerability reader gives P(answerable) {p:.3f} (< {t}; "
                  f"best cosine {best:.4f}) and no candidate holds an exact term of the question: answer 'not found' "
                  "without an LLM call", **numbers)
    return False
