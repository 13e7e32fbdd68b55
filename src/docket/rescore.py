"""Re-score the candidate pool with signals the retriever's cosine ignores.

The peers rank by the retriever's score alone. Three cheap signals, computed over the pool
only (no model call, no extra retrieval), often say more:

- title: the question names the candidate's title ("... Arthur's Magazine or First for
  Women?"). The title is metadata docket already shows in the passage header.
- lexical: BM25 of the question's words over the pool (rare words such as names and numbers
  count most), normalised to 0..1 by the pool's best.
- link: a candidate whose title is mentioned in the text of one of the top passages (the
  bridge of a multi-hop question: the film's paragraph names the actress, so the actress's
  paragraph matters even though the question never names her). `link_rounds` re-reads the top
  after each round, so a chain (song -> band -> the band's city) is followed one hop per round.

Words are compared folded (lower case, accents and possessive 's dropped), so "Akinoshu Kenji's"
in a question matches the title "Akinoshū Kenji".

    new score = cosine + title_weight * title + lexical_weight * lexical + link_weight * link

Every bonus is >= 0 and in cosine units, so the floor keeps its meaning for a candidate with
no extra evidence; extra evidence can lift a candidate over the floor. Untrusted candidates
(user-generated, `trust: untrusted`) earn no bonus and do not count as linking passages. Candidates are re-ranked
by the new score (ties keep the old order) and get new `rank`s; the trace logs each move up.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from docket.context import Context
from docket.model import Candidate
from docket.text import STOPWORDS, content_words, fold, phrase, title_variants, words

MOVE = "rescore"
__all__ = ["STOPWORDS", "bm25_scores", "content_words", "fold", "phrase", "rescore", "signals", "title_match",
           "title_match_strict", "title_variants", "words"]


def title_match(title: str, text: str) -> float:
    """1.0 when a variant of the title occurs in the text as a phrase; otherwise the share of the
    title's content words found in the text, squared (partial matches count little)."""
    if not title.strip():
        return 0.0
    hay = phrase(text)
    variants = title_variants(title)
    if any(phrase(v) in hay for v in variants):
        return 1.0
    tw = set(content_words(variants[-1] if variants else title))
    if not tw:
        return 0.0
    present = set(words(text))
    share = len(tw & present) / len(tw)
    return share * share


def bm25_scores(query: str, docs: Sequence[str], k1: float = 1.2, b: float = 0.75) -> list[float]:
    """Okapi BM25 of the query's content words over the pool (idf from the pool itself)."""
    toks = [words(d) for d in docs]
    n = len(toks)
    if n == 0:
        return []
    avgdl = sum(len(t) for t in toks) / n or 1.0
    df: Counter[str] = Counter()
    for t in toks:
        df.update(set(t))
    q = list(dict.fromkeys(content_words(query)))
    out = []
    for t in toks:
        tf = Counter(t)
        s = 0.0
        for w in q:
            f = tf.get(w, 0)
            if not f:
                continue
            idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
            s += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * len(t) / avgdl))
        out.append(s)
    return out


def signals(candidates: Sequence[Candidate], question: str) -> list[dict[str, float]]:
    """Per candidate: title (0..1), lexical (0..1), link (0..1)."""
    texts = [f"{c.chunk.title} {c.chunk.text}" if c.chunk.title else c.chunk.text for c in candidates]
    bm = bm25_scores(question, texts)
    top_bm = max(bm, default=0.0)
    out = [
        {"title": title_match(c.chunk.title, question), "lexical": (s / top_bm if top_bm > 0 else 0.0), "link": 0.0}
        for c, s in zip(candidates, bm)
    ]
    return out


def rescore(candidates: list[Candidate], ctx: Context) -> list[Candidate]:
    pol = ctx.policy.rescore
    if len(candidates) < 2:
        return candidates
    sig = signals(candidates, ctx.question)
    # untrusted text (forum posts, web pages) earns no bonus: its words are written by strangers,
    # and echoing the question's words is exactly what a planted passage does
    for c, s in zip(candidates, sig):
        if c.chunk.untrusted:
            s["title"] = s["lexical"] = 0.0
    first = [
        c.score + pol.title_weight * s["title"] + pol.lexical_weight * s["lexical"] for c, s in zip(candidates, sig)
    ]
    # links: titles mentioned by the best passages. Each round re-reads the top after the last
    # round's links, so a chain question (song -> band -> city) is followed one hop per round.
    new = list(first)
    if pol.link_weight > 0 and pol.link_top > 0:
        for _ in range(pol.link_rounds):
            top = sorted(range(len(candidates)), key=lambda i: (-new[i], candidates[i].rank))[: pol.link_top]
            linking = [candidates[j].chunk.text for j in top if not candidates[j].chunk.untrusted]
            for i, c in enumerate(candidates):
                if sig[i]["link"] or i in top or not c.chunk.title.strip() or c.chunk.untrusted or not linking:
                    continue
                sig[i]["link"] = max(title_match_strict(c.chunk.title, text) for text in linking)
            new = [f + pol.link_weight * s["link"] for f, s in zip(first, sig)]
    order = sorted(range(len(candidates)), key=lambda i: (-new[i], candidates[i].rank))
    out = []
    for r, i in enumerate(order, 1):
        c = candidates[i]
        out.append(replace(c, score=round(new[i], 6), rank=r))
        if r < c.rank:
            s = sig[i]
            ctx.trace.add(
                MOVE, "promote", [c.chunk.id], f"rank {c.rank} -> {r}: cosine {c.score:.3f} + title {s['title']:.2f}, "
                f"lexical {s['lexical']:.2f}, link {s['link']:.2f}", score=round(new[i], 4), cosine=c.score,
            )
    return out


def title_match_strict(title: str, text: str) -> float:
    """Only whole-phrase mentions count as links (partial word overlap is too loose for them)."""
    hay = phrase(text)
    return 1.0 if any(phrase(v) in hay for v in title_variants(title)) else 0.0
