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

The signals are computed for the whole pool at once from each chunk's words as vocabulary ids
(docket.features.RescoreIndex, built once per chunk): numpy finds the question's words in the
pool, and only candidates with a hit get Python work (a phrase check). A chunk seen for the first
time is only glanced at (docket.features.glance, issue 21 decision 3): the question's words are
found in the pool's folded texts directly, and its full index is built when it is seen again.
Every float is the one the per-candidate formulas give, bit for bit (tests/test_rescore_fast.py
replays recorded decisions; tests/test_rescore_lazy.py checks every path against the formulas).
"""

from __future__ import annotations

import math
import operator
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from docket.context import Context
from docket.features import (
    HEAD_FIELDS,
    NO_INDEX,
    RescoreIndex,
    Vocabulary,
    current_vocabulary,
    glance,
    rescore_indexes,
)
from docket.model import Candidate
from docket.text import STOPWORDS, content_words, fold, phrase, title_variants, words

MOVE = "rescore"
__all__ = ["STOPWORDS", "bm25_scores", "content_words", "fold", "phrase", "rescore", "rescore_order", "signals",
           "title_match", "title_match_strict", "title_variants", "words"]
K1, B = 1.2, 0.75


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


def title_match_strict(title: str, text: str) -> float:
    """Only whole-phrase mentions count as links (partial word overlap is too loose for them)."""
    return 1.0 if title_in(title, phrase(text)) else 0.0


def title_in(title: str, hay: str) -> bool:
    """Whether some variant of `title` is a whole phrase of `hay` (a text's `phrase`): the test of
    `title_match_strict`, for a caller that holds the text's phrase already."""
    return any(phrase(v) in hay for v in title_variants(title))


def bm25_scores(query: str, docs: Sequence[str], k1: float = K1, b: float = B) -> list[float]:
    """Okapi BM25 of the query's content words over the pool (idf from the pool itself)."""
    terms = []
    for d in docs:
        tf = Counter(words(d))
        terms.append((frozenset(tf), {w: n for w, n in tf.items() if n > 1}, sum(tf.values())))
    return _bm25(query, terms, k1, b)


def _bm25(query: str, docs: Sequence[tuple[Any, ...]], k1: float = K1, b: float = B) -> list[float]:
    """BM25 from each document's word set, repeated-word counts and length (its first three
    items, computed once per chunk). The same sums in the same order as the textbook loop over
    the query's words, so the same floats."""
    n = len(docs)
    if n == 0:
        return []
    avgdl = sum(d[2] for d in docs) / n or 1.0
    q = list(dict.fromkeys(content_words(query)))
    qset = frozenset(q)
    df = dict.fromkeys(q, 0)
    hits: list[Any] = []
    for d in docs:
        if qset.isdisjoint(d[0]):
            hits.append(None)
            continue
        common = qset & d[0]
        found = [w for w in q if w in common] if len(common) > 1 else list(common)
        hits.append(found)
        for w in found:
            df[w] += 1
    idf = {w: math.log(1 + (n - c + 0.5) / (c + 0.5)) for w, c in df.items() if c}
    out = [0.0] * n
    for i, found in enumerate(hits):
        if found is None:
            continue
        repeats, length = docs[i][1], docs[i][2]
        s = 0.0
        for w in found:
            f = repeats.get(w, 1)
            s += idf[w] * f * (k1 + 1) / (f + k1 * (1 - b + b * length / avgdl))
        out[i] = s
    return out


class _Pool:
    """What re-scoring reads about one pool, gathered once: each candidate's features and its
    `RescoreIndex`, the per-candidate numbers (`head`, one row each) and every indexed
    candidate's words side by side (`ids`, `code`). A candidate never seen before is only
    glanced at (features.glance): its index has no word rows, and `glanced` holds where the
    question's content words occur in it (candidate, word, count)."""

    __slots__ = ("chunks", "entries", "index", "vocab", "head", "ids", "code", "ends", "fresh", "fresh_probe_words",
                 "glanced")

    def __init__(self, chunks: list[Any], ctx: Context, wanted: list[str]) -> None:
        self.chunks = chunks
        entries = self.entries = ctx.entries(chunks)  # the assembler's look-up, not another
        vocab = self.vocab = current_vocabulary()
        index = [r for e in entries if (r := e.features._rescore_index).vocab is vocab]
        #: the candidates glanced at (ascending), and where the question's words occur in them
        self.fresh: list[int] = []
        self.fresh_probe_words: list[tuple[str, ...]] = []
        self.glanced = (_EMPTY, _EMPTY, _EMPTY)
        if len(index) != len(entries):  # a chunk not indexed under this vocabulary
            index = self._first_sight(vocab, wanted)
        self.index = index
        self.head = np.frombuffer(b"".join(map(_HEAD, index)), dtype=np.int32).reshape(len(index), HEAD_FIELDS)
        body = np.frombuffer(b"".join(map(_BODY, index)), dtype=np.int32).reshape(-1, 2)
        self.ids, self.code = np.ascontiguousarray(body[:, 0]), body[:, 1]
        self.ends = np.cumsum(self.head[:, 0])

    def _first_sight(self, vocab: Vocabulary, wanted: list[str]) -> list[RescoreIndex]:
        """Indexes for a pool with chunks not indexed under `vocab`. One seen before (glanced at
        by an earlier pool, or indexed under an older vocabulary) gets its full index, built once
        and kept; one never indexed (never seen, or read with terms from a feature record) is
        glanced at (issue 21, decision 3: what this question needs, for the candidates it touches)."""
        pairs = [(e.features, c) for e, c in zip(self.entries, self.chunks)]
        fresh = [i for i, (f, _) in enumerate(pairs) if f._rescore_index is NO_INDEX]
        if not fresh:
            return rescore_indexes(pairs, vocab)
        index: list[Any] = [None] * len(pairs)
        if len(fresh) < len(pairs):
            known = sorted(set(range(len(pairs))).difference(fresh))
            for i, r in zip(known, rescore_indexes([pairs[i] for i in known], vocab)):
                index[i] = r
        seen = glance([pairs[i] for i in fresh], wanted)
        for i, r in zip(fresh, seen.indexes):
            index[i] = r
        self.fresh = fresh
        self.fresh_probe_words = seen.probes
        self.glanced = (np.asarray(fresh, dtype=np.int64)[seen.rows], seen.words, seen.counts)
        return index

    def rows(self, pos: Any) -> Any:
        """The candidate (row) each position in `ids` belongs to."""
        return np.searchsorted(self.ends, pos, side="right")

    def probes(self) -> tuple[Any, Any]:
        """(id, row) of every probe word of the indexed candidates that may earn a link."""
        pos = np.flatnonzero(self.code & 2)
        rows = self.rows(pos)
        keep = self.head[:, 3][rows] == 1
        return self.ids[pos[keep]], rows[keep]

    def fresh_probes(self) -> dict[str, list[int]]:
        """probe word -> the glanced-at candidates that may earn a link and have it (ascending)."""
        out: dict[str, list[int]] = {}
        linkable = self.head[:, 3]
        for i, words_ in zip(self.fresh, self.fresh_probe_words):
            if linkable[i]:
                for w in words_:
                    out.setdefault(w, []).append(i)
        return out


_EMPTY = np.zeros(0, dtype=np.int64)
_HEAD = operator.attrgetter("head")
_BODY = operator.attrgetter("body")


def _match(ids: Any, wanted: Sequence[int]) -> tuple[Any, Any]:
    """(position in `ids`, index in `wanted`) of every element of `ids` that is one of `wanted`
    (vocabulary ids; -1 for a word no chunk has): one vectorised comparison per wanted word,
    which for a question's few words beats any look-up structure."""
    found = [(k, np.flatnonzero(ids == w)) for k, w in enumerate(wanted) if w >= 0]
    found = [(k, p) for k, p in found if len(p)]
    if not found:
        return _EMPTY, _EMPTY
    pos = np.concatenate([p for _, p in found])
    return pos, np.repeat(np.asarray([k for k, _ in found], dtype=np.int64), [len(p) for _, p in found])


def _rows_meeting(sorted_ids: Any, ids: Any, rows: Any) -> list[int]:
    """The distinct `rows` (ascending) of the `ids` that are among `sorted_ids`."""
    if not len(sorted_ids) or not len(ids):
        return []
    at = np.searchsorted(sorted_ids, ids)
    at[at == len(sorted_ids)] = 0
    return sorted(set(rows[sorted_ids[at] == ids].tolist()))


def _bm25_pool(q: list[str], pool: _Pool, k1: float = K1, b: float = B) -> tuple[Any, Any, Any]:
    """`_bm25` over the pool, vectorised: per document the same terms added in the same order
    (the question's word order, by a sequential accumulate; an absent word adds 0.0, which
    changes no sum of positive terms), each term the same IEEE operations in the same order.
    `q` is `content_words(query)`, each word once. Also returns the matches of the question's
    words in the indexed candidates and their codes (for the title signal)."""
    n = len(pool.index)
    out = np.zeros(n)
    if n == 0:
        return out, _EMPTY, _EMPTY
    lengths = pool.head[:, 1]
    avgdl = int(lengths.sum(dtype=np.int64)) / n or 1.0  # the exact integer sum, as Python's
    pos, k = _match(pool.ids, pool.vocab.lookup(q))
    codes = pool.code[pos]
    tf = codes >> 2
    in_text = tf > 0
    bk = k[in_text]
    doc = pool.rows(pos[in_text])
    btf = tf[in_text]
    fresh_doc, fresh_k, fresh_tf = pool.glanced
    if len(fresh_doc):  # the glanced-at candidates' matches: other rows, so no cell is set twice
        bk, doc, btf = np.concatenate((bk, fresh_k)), np.concatenate((doc, fresh_doc)), np.concatenate((btf, fresh_tf))
    if not len(bk):
        return out, pos, codes
    btf = btf.astype(np.float64)
    idf = [math.log(1 + (n - c + 0.5) / (c + 0.5)) if c else 0.0 for c in np.bincount(bk, minlength=len(q)).tolist()]
    length = lengths[doc].astype(np.float64)
    term = np.asarray(idf)[bk] * btf * (k1 + 1) / (btf + k1 * (1 - b + b * length / avgdl))
    per_word = np.zeros((len(q), n))
    per_word[bk, doc] = term
    return np.add.accumulate(per_word, axis=0)[-1], pos, codes


def _titles_pool(question_words: list[str], pool: _Pool, pos: Any, codes: Any) -> Any:
    """`_titles`, computed only for candidates with a title word among the question's words."""
    out = np.zeros(len(pool.index))
    hit = pos[(codes & 1) == 1]
    qwords = set(question_words)
    index = pool.index
    rows = set(pool.rows(hit).tolist()) if len(hit) else set()
    rows.update(i for i in pool.fresh if not index[i].title_words.isdisjoint(qwords))
    if not rows:
        return out
    qphrase = " " + " ".join(question_words) + " "  # phrase(question)
    for i in sorted(rows):
        r = index[i]
        tw = r.title_words
        if any(p in qphrase for p in r.title_phrases):
            out[i] = 1.0
        else:
            share = len(tw & qwords) / len(tw)
            out[i] = share * share
    return out


def _signals(candidates: Sequence[Candidate], ctx: Context) -> tuple[_Pool, Any, Any]:
    """The pool, and the title and lexical signals as float64 arrays."""
    qw = words(ctx.question)
    q = list(dict.fromkeys(w for w in qw if w not in STOPWORDS))  # content_words(question), each once
    pool = _Pool([c.chunk for c in candidates], ctx, q)
    bm, pos, codes = _bm25_pool(q, pool)
    top_bm = bm.max() if len(bm) else 0.0
    lexical = bm / top_bm if top_bm > 0 else np.zeros(len(bm))
    return pool, _titles_pool(qw, pool, pos, codes), lexical


def signals(candidates: Sequence[Candidate], question: str) -> list[dict[str, float]]:
    """Per candidate: title (0..1), lexical (0..1), link (0..1)."""
    from docket.features import default_cache

    ctx = Context(question=question, store=None, policy=None, counter=None, features=default_cache())  # type: ignore[arg-type]
    _, title, lexical = _signals(candidates, ctx)
    return [{"title": t, "lexical": s, "link": 0.0} for t, s in zip(title.tolist(), lexical.tolist())]


def _order(values: Any, ranks: Any, fast: bool) -> Any:
    """Indexes by (-value, rank), ties in input order (a stable sort): an int array when `fast`."""
    if fast:
        return np.lexsort((ranks, -values))
    return sorted(range(len(values)), key=lambda i: (-values[i], ranks[i]))


def rescore_order(candidates: Sequence[Candidate], ctx: Context) -> tuple[list[int], list[Any]]:
    """The re-ranking without building candidates: indexes into `candidates`, best first, and
    their new scores (rounded to 6 places) in that order. Logs each promotion."""
    pol = ctx.policy.rescore
    n = len(candidates)
    pool, title_a, lexical_a = _signals(candidates, ctx)
    # untrusted text (forum posts, web pages) earns no bonus: its words are written by strangers,
    # and echoing the question's words is exactly what a planted passage does
    unt = pool.head[:, 2] == 1
    untrusted = unt.tolist()
    if True in untrusted:
        title_a[unt] = 0.0
        lexical_a[unt] = 0.0
    scores = list(map(_SCORE, candidates))
    ranks = list(map(_RANK, candidates))
    # float arithmetic on arrays is the same IEEE arithmetic as on Python floats; any other
    # score type (numpy float32, Decimal) keeps the element-wise Python path
    fast = _PLAIN.issuperset(map(type, scores)) and _INT.issuperset(map(type, ranks))
    tw, lw, kw = pol.title_weight, pol.lexical_weight, pol.link_weight
    link = [0.0] * n
    if fast:
        sc, rk = np.asarray(scores, dtype=np.float64), np.asarray(ranks, dtype=np.int64)
        fast = not np.isnan(sc).any()
    if not fast:
        title, lexical = title_a.tolist(), lexical_a.tolist()
    if fast:
        first = sc + tw * title_a + lw * lexical_a
        new: Any = first
    else:
        rk = ranks  # type: ignore[assignment]
        first = [s + tw * t + lw * x for s, t, x in zip(scores, title, lexical)]  # type: ignore[assignment]
        new = list(first)
    order = _order(new, rk, fast)
    if kw > 0 and pol.link_top > 0 and pool.head[:, 3].any():
        new, order = _link_rounds(pool, pol, untrusted, link, first, rk, order, fast)
    add = ctx.trace.add_format
    if fast:
        order_ix = order
        order = order.tolist()
        out_scores = rounded(new[order_ix], 6)
        moved_up = np.flatnonzero(np.arange(1, n + 1) < rk[order_ix])
        at = order_ix[moved_up]
        at4 = rounded(new[at], 4)
        promoted, promoted_ix = moved_up.tolist(), at.tolist()
        title_at, lexical_at = title_a[at].tolist(), lexical_a[at].tolist()
    else:
        out_scores = [round(new[i], 6) for i in order]
        promoted = [r for r, i in enumerate(order) if r + 1 < ranks[i]]
        promoted_ix = [order[r] for r in promoted]
        at4 = [round(new[i], 4) for i in promoted_ix]
        title_at, lexical_at = [title[i] for i in promoted_ix], [lexical[i] for i in promoted_ix]
    chunks = pool.chunks
    for i, r, s4, t, x in zip(promoted_ix, promoted, at4, title_at, lexical_at):
        s = scores[i]
        add(MOVE, "promote", [chunks[i].id], _PROMOTE, (ranks[i], r + 1, s, t, x, link[i]), score=s4, cosine=s)
    return order, out_scores


def _link_rounds(pool: _Pool, pol: Any, untrusted: list[bool], link: list[float], first: Any, rk: Any, order: Any,
                 fast: bool) -> tuple[Any, Any]:
    """Links: titles mentioned by the best passages (`link` is set in place). Each round re-reads
    the top after the last round's links, so a chain question (song -> band -> city) is followed
    one hop per round. A round that links nothing leaves the scores, so the next round's top,
    unchanged: stop. Returns the new scores and order."""
    kw = pol.link_weight
    new = first
    probe_ids, probe_rows = pool.probes()
    fresh_probes = pool.fresh_probes() if pool.fresh else {}
    entries, chunks, index = pool.entries, pool.chunks, pool.index
    for _ in range(pol.link_rounds):
        top = order[: pol.link_top]
        if fast:
            top = top.tolist()
        linking = [j for j in top if not untrusted[j]]
        if not linking:
            break
        in_top = set(top)
        probed = [i for i in _probed(pool, linking, probe_ids, probe_rows, fresh_probes) if not link[i] and i not in in_top]
        found = False
        if probed:
            # the top's phrases end to end: a phrase (single spaces between words) cannot match
            # across the double space where two of them meet, so this finds what each finds
            hay_text = "".join([entries[j].features.text_phrase(chunks[j]) for j in linking]).__contains__
            for i in probed:
                if any(map(hay_text, index[i].title_phrases)):
                    link[i] = 1.0
                    found = True
        if not found:
            break
        new = first + kw * np.asarray(link) if fast else [f + kw * x for f, x in zip(first, link)]
        order = _order(new, rk, fast)
    return new, order


def _probed(pool: _Pool, linking: list[int], probe_ids: Any, probe_rows: Any, fresh_probes: dict[str, list[int]]) -> list[int]:
    """The candidates (ascending) with a probe word among the words of the linking passages'
    texts: the indexed ones by vocabulary id, the glanced-at ones by the word itself."""
    entries, chunks = pool.entries, pool.chunks
    rows: list[int] = []
    if len(probe_ids):
        hay = np.sort(np.concatenate([entries[j].features.text_word_ids(chunks[j], pool.vocab) for j in linking]))
        rows = _rows_meeting(hay, probe_ids, probe_rows)
    if fresh_probes:
        hay_words = frozenset().union(*[entries[j].features.text_words(chunks[j]) for j in linking])
        met = [fresh_probes[w] for w in hay_words.intersection(fresh_probes)]
        if met:
            rows = sorted(set(rows).union(*met))
    return rows


_SCORE = operator.attrgetter("score")
_RANK = operator.attrgetter("rank")
_PLAIN = frozenset({float, int})
_INT = frozenset({int})


def rounded(values: Any, digits: int) -> list[float]:
    """`[round(float(v), digits) for v in values]` for a float64 array, vectorised: numpy's round
    (scale, round half to even, divide back) is Python's correctly rounded one except when the
    scaled value lies within a hair of a half; those few (and any huge or non-finite value) are
    rounded by Python. The division is IEEE-exact rounding of an integer, as Python's is."""
    scale = 10.0**digits
    y = values * scale
    out = (np.rint(y) / scale).tolist()
    with np.errstate(invalid="ignore"):
        near = np.abs(np.abs(y - np.floor(y)) - 0.5) < 1e-6
        wild = ~(np.abs(values) < 1e6)
    for i in np.flatnonzero(near | wild).tolist():
        out[i] = round(float(values[i]), digits)
    return out  # type: ignore[no-any-return]


_PROMOTE = "rank {} -> {}: cosine {:.3f} + title {:.2f}, lexical {:.2f}, link {:.2f}"


def rescore(candidates: list[Candidate], ctx: Context) -> list[Candidate]:
    """Candidates re-ranked by cosine plus the bonuses, with new scores and ranks."""
    if len(candidates) < 2:
        return candidates
    order, scores = rescore_order(candidates, ctx)
    out = []
    for r, (i, s) in enumerate(zip(order, scores), 1):
        c = candidates[i]
        out.append(Candidate(c.chunk, s, r) if type(c) is Candidate else replace(c, score=s, rank=r))
    return out
