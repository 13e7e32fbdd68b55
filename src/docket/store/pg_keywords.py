"""PostgreSQL BM25 that reads the top postings of each query term, not all of them.

Every posting carries an impact `w`: its BM25 term-frequency part, tf·(k1+1) / (tf + k1·(1 − b +
b·len/A0)), worked out at write time with a store-wide average length A0 (meta `bm25_avgdl`,
fixed when the first chunk is written; `docket import` sets it from the whole load). An index on
(term, w DESC) hands out a term's postings best first. A query then

1. sums each term's document frequency over the ACL classes the principal may read, from
   term_df: a count per (term, class) that every write keeps in its own transaction (schema 6).
   The sum is the integer counting the readable postings would give, so idf is the same float;
   counting instead read every posting of a frequent term, which at 1M chunks cost more than
   the top-M read saved,
2. reads the top M readable postings of each term (M grows with k, see `first_m`),
3. gives each chunk read a lower bound (its partial score from the postings read) and an upper
   bound (plus, for each term with unread postings it was not read for, the most such a posting
   can add, below), takes the k-th best lower bound θ and scores exactly only the chunks whose
   upper bound reaches θ (no other can be in the top k): the postings already read plus one
   primary-key lookup for each (chunk, term) pair not among them, with the readable classes'
   statistics (N, average length A), each chunk's terms summed in term order: the floats of the
   exact statement, digit for digit;
4. proves the answer: a chunk outside every term's top M scores at most
   UB = Σ over terms with more than M postings of idf · min(k1+1, w_M · max(1, A/A0)),
   w_M the impact of that term's M-th posting. (With len/A in place of len/A0 the tf part grows
   by at most A/A0: the ratio is largest for tf → 0, len → ∞.) When the k-th filtered candidate
   scores above UB, no unread chunk can enter the top k: the result IS the exact BM25 top k.
5. Otherwise the k-th score found, θ (an exact score of a readable chunk, so the true k-th is at
   least θ), sets how deep to read again: each term with unread postings gets a share τ of
   θ / slack² (`thresholds`: water-filling, smallest bounds first) and is read down to the
   impact τ / (idf · max(1, A/A0) · slack), never less than its first read and at most 4M
   postings. A chunk no read holds then scores below Σ τ < θ, so steps 3-4 on the deeper read
   prove the top k unless a term's read stopped at 4M; frequent terms (small idf) get thresholds
   near their best impacts and add few postings. If that proof fails too, the exact statement runs.

So the keyword ranking never differs from reading every posting (the ACL included: postings of
classes the principal may not read are skipped in the index scans, and a chunk found readable has
only readable postings); what M buys is how often the proof holds at once.
"""

from __future__ import annotations

from typing import Any

#: BM25 k1 + 1: the tf part of a posting's score never reaches it
_K1P1 = 2.2
#: a primary-key lookup of a (chunk, term) pair costs about this many postings read in order
#: (index pages hold ~100 postings; a lookup descends the tree): more lookups than the readable
#: postings of the query's terms / this, and reading every posting is cheaper. At 100k chunks a
#: long question (18 terms, 11 with unread postings) had 17,057 chunks to refine: 187k lookups,
#: 2.5 s, against 45 ms for reading every posting.
_LOOKUP = 20
#: slack on the bound for float4 impacts (w is stored as `real`) and the float8 sums
_SLACK = 1.0 + 1e-5

#: the readable classes' statistics, the query's terms, their df and idf (every statement starts so)
_HEAD = (
    "WITH r AS (SELECT n, total_len FROM acl_classes {cls_cond}), "
    "st AS (SELECT coalesce(sum(n), 0)::float8 AS n, "
    "greatest(1.0, coalesce(sum(total_len), 0)::float8 / greatest(1, coalesce(sum(n), 0))) AS avg FROM r), "
    "q AS (SELECT DISTINCT u.term FROM unnest(tsvector_to_array(to_tsvector('english', %s))) AS u(term)), "
    "t AS MATERIALIZED (SELECT q.term, d.df, ln(1 + ((SELECT n FROM st) - d.df + 0.5) / (d.df + 0.5)) AS idf "
    "FROM q CROSS JOIN LATERAL ({df}) d WHERE d.df > 0 ORDER BY q.term), "
)
#: a term's document frequency over the readable classes: summed from term_df (kept by every write)
_STORED_DF = "SELECT coalesce(sum(td.df), 0)::bigint AS df FROM term_df td WHERE td.term = q.term {df_cond}"
#: ... or counted from its postings (the reference the stored counts are tested against)
_COUNTED_DF = "SELECT count(*) AS df FROM chunk_terms ct WHERE ct.term = q.term {post_cond}"


def _head(readable: str, *, counted: bool = False) -> str:
    """The statements' common start, the ACL conditions filled in."""
    cls_cond = f"WHERE id = ANY({readable})" if readable else ""
    post_cond = f"AND ct.cls = ANY({readable})" if readable else ""
    df_cond = f"AND td.cls = ANY({readable})" if readable else ""
    df = (_COUNTED_DF if counted else _STORED_DF).format(post_cond=post_cond, df_cond=df_cond)
    return _HEAD.format(cls_cond=cls_cond, df=df)


_SCORE = "t.idf * p.tf * 2.2 / (p.tf + 1.2 * (0.25 + 0.75 * p.len / (SELECT avg FROM st)))"


def exact_sql(readable: str, where: str, *, counted: bool = False) -> str:
    """The exact statement: every readable posting of every query term is scored. `counted`:
    each term's df counted from its postings (the statement before term_df; the reference), else
    summed from term_df. Parameters: acl args, query text, acl args, acl args, [filter args], k."""
    post_cond = f"AND ct.cls = ANY({readable})" if readable else ""
    sql = _head(readable, counted=counted) + (
        f"s AS (SELECT p.chunk, sum({_SCORE} ORDER BY t.term) AS score FROM t CROSS JOIN LATERAL "
        f"(SELECT ct.chunk, ct.tf, ct.len FROM chunk_terms ct WHERE ct.term = t.term {post_cond} OFFSET 0) p "
        "GROUP BY p.chunk) "
    )
    if where:
        return sql + (f"SELECT c.id, s.score FROM s JOIN chunks c ON c.rowid = s.chunk WHERE true {where} "
                      "ORDER BY s.score DESC, c.id LIMIT %s")
    # rank first, join only the k winners (same result)
    return sql + ("SELECT c.id, top.score FROM (SELECT chunk, score FROM s ORDER BY score DESC, chunk "
                  "LIMIT %s) top JOIN chunks c ON c.rowid = top.chunk ORDER BY top.score DESC, c.id")


def impact_sql(readable: str, where: str) -> str:
    """The top-M statement: the k best with their exact scores, and on every row (one row with
    NULLs when nothing matched) the bound UB on chunks no read holds, whether any term had unread
    postings, and per such term (in term order) its bound and its scale (idf · max(1, A/A0) ·
    slack: a posting of impact w adds at most w · scale). Each term's postings are read best first
    down to the threshold given for it (none: 0), at most `limit` of them (NULL: no limit).
    Parameters: acl args, query text, acl args, limit, thresholded terms, their thresholds, acl
    args, [filter args], k, k, k."""
    post_cond = f"AND ct.cls = ANY({readable})" if readable else ""
    a0 = "greatest(1.0, coalesce((SELECT value::float8 FROM meta WHERE key = 'bm25_avgdl'), 1.0))"
    score = _SCORE.replace("p.", "x.")
    part = (f"part AS MATERIALIZED (SELECT x.chunk, sum({score}) AS lb, coalesce(sum(fb.bound), 0) AS seen FROM top x "
            "JOIN t ON t.term = x.term LEFT JOIN fb ON fb.term = x.term GROUP BY x.chunk), ")
    if where:  # the filters choose among the candidates before anything is refined
        part += (f"pf AS MATERIALIZED (SELECT part.* FROM part JOIN chunks c ON c.rowid = part.chunk WHERE true {where}), ")
    else:
        part += "pf AS (SELECT * FROM part), "
    return _head(readable) + (
        "th AS (SELECT t.term, t.idf, t.df, x.wt, %s::bigint AS lim FROM t "
        "LEFT JOIN unnest(%s::text[], %s::float8[]) AS x(term, wt) ON x.term = t.term), "
        # each term's readable postings, best impact first (index (term, w DESC)), down to its threshold
        "top AS MATERIALIZED (SELECT th.term, p.chunk, p.tf, p.len, p.w FROM th CROSS JOIN LATERAL "
        f"(SELECT ct.chunk, ct.tf, ct.len, ct.w FROM chunk_terms ct WHERE ct.term = th.term "
        f"AND ct.w >= coalesce(th.wt, 0) {post_cond} ORDER BY ct.w DESC LIMIT th.lim) p), "
        # per term with unread postings: the most one of them can add (at most the least impact read,
        # and below the threshold unless the read stopped at its limit; A/A0 applied)
        f"sc AS (SELECT greatest(1.0, (SELECT avg FROM st) / {a0}) AS f), "
        "fb AS MATERIALIZED (SELECT th.term, th.idf * least("
        f"{_K1P1}, coalesce(CASE WHEN m.n >= th.lim THEN m.w ELSE least(m.w, th.wt) END * (SELECT f FROM sc), "
        f"{_K1P1})) * {_SLACK} AS bound, th.idf * (SELECT f FROM sc) * {_SLACK} AS scale FROM th "
        "LEFT JOIN (SELECT term, min(w) AS w, count(*) AS n FROM top GROUP BY term) m ON m.term = th.term "
        "WHERE th.df > coalesce(m.n, 0)), "
        "tot AS (SELECT coalesce(sum(bound), 0) AS ub, count(*) > 0 AS cut, array_agg(term ORDER BY term) AS terms, "
        "array_agg(bound ORDER BY term) AS bounds, array_agg(scale ORDER BY term) AS scales FROM fb), "
        # each candidate's partial score (a lower bound) and the bounds of the terms it was read for
        + part +
        # the k-th best lower bound; only candidates whose upper bound reaches it can be in the top k
        "theta AS (SELECT CASE WHEN count(*) < %s THEN 0 ELSE min(lb) END AS v FROM "
        "(SELECT lb FROM pf ORDER BY lb DESC LIMIT %s) x), "
        "ref AS MATERIALIZED (SELECT chunk FROM pf WHERE lb + (SELECT ub FROM tot) - seen >= (SELECT v FROM theta) * "
        "(1 - 1e-9)), "
        # too many lookups to beat reading every posting: stop here, unproven (the caller reads them all)
        f"bail AS (SELECT (SELECT count(*) FROM ref) * (SELECT count(*) FROM fb) * {_LOOKUP} > "
        "(SELECT coalesce(sum(df), 0) FROM t) AS v), "
        # their (chunk, term) pairs not read yet: one primary-key lookup each
        "miss AS (SELECT r.chunk, fb.term FROM ref r CROSS JOIN fb WHERE NOT (SELECT v FROM bail) "
        "EXCEPT SELECT chunk, term FROM top), "
        "got AS (SELECT m.term, m.chunk, p.tf, p.len FROM miss m CROSS JOIN LATERAL "
        "(SELECT ct.tf, ct.len FROM chunk_terms ct WHERE ct.term = m.term AND ct.chunk = m.chunk OFFSET 0) p), "
        "allp AS (SELECT term, chunk, tf, len FROM top WHERE chunk IN (SELECT chunk FROM ref) AND NOT (SELECT v FROM bail) "
        "UNION ALL SELECT term, chunk, tf, len FROM got), "
        f"s AS (SELECT p.chunk, sum({_SCORE} ORDER BY t.term) AS score FROM allp p JOIN t ON t.term = p.term "
        "GROUP BY p.chunk), "
        + ("win AS (SELECT c.id, s.score FROM s JOIN chunks c ON c.rowid = s.chunk "
           "ORDER BY s.score DESC, c.id LIMIT %s) " if where else
           # rank first, join only the k winners (as the exact statement does)
           "win AS (SELECT c.id, top_k.score FROM (SELECT chunk, score FROM s ORDER BY score DESC, chunk LIMIT %s) "
           "top_k JOIN chunks c ON c.rowid = top_k.chunk) ") +
        "SELECT win.id, win.score, tot.ub, tot.cut, tot.terms, tot.bounds, tot.scales, (SELECT v FROM bail) AS bail "
        "FROM tot LEFT JOIN win ON true "
        "ORDER BY win.score DESC, win.id"
    )


def thresholds(theta: float, bounds: list[float], scales: list[float]) -> list[float]:
    """Impact thresholds for the second read, one per term with unread postings, such that a chunk
    none of the reads holds scores at most Σ bound ≤ θ / slack², below the k-th score the first
    read found (θ): so the second read's top k is proven. The budget is shared out by water-filling,
    the smallest bounds first: a term whose bound fits its share keeps its first read; the others
    split what is left equally, in score units, so a rare term (large idf) is read deeper than a
    frequent one, whose list is long and whose share asks only for its very best postings."""
    left = theta / (_SLACK * _SLACK) * (1 - 1e-9)
    out = [0.0] * len(bounds)
    rest = len(bounds)
    for i in sorted(range(len(bounds)), key=bounds.__getitem__):
        share = max(0.0, left / rest)
        tau = min(bounds[i], share)
        out[i] = tau / scales[i]
        left -= tau
        rest -= 1
    return out


def first_m(k: int) -> int:
    """The M to try for a top k: 16k postings per term, at least 400. Measured with real questions
    (benchmarks/pg_keywords.py): on 100k chunks at k = 100, M = 400 proved the top k at once for
    32 % of queries, M = 1,600 for 90 % (p50 0.8x reading every posting). On 300k chunks the proof
    held at once for only 64 % (k = 100, M = 1,600) and 27 % (k = 10, M = 400) and the top-M path
    was 1.6x slower than reading every posting, so it is not the default: a store opts in with
    `PostgresStore.keyword_m`. With term_df (no count per query) it was 1.0-1.16x reading every
    posting at 1M (k = 100), the first read proving 9 % of real questions."""
    return max(400, 16 * k)


def proven(rows: list[dict[str, Any]], k: int) -> bool:
    """Whether the impact statement's rows are the exact top k (see the module docstring)."""
    if not rows:
        return True
    head = rows[0]
    if not head["cut"]:
        return True  # every readable posting of every term was read
    if head["bail"]:
        return False  # too many chunks to refine: nothing was scored
    hits = [r for r in rows if r["id"] is not None]
    return len(hits) >= k and float(hits[k - 1]["score"]) > float(head["ub"]) * _SLACK


def search(conn: Any, query_text: str, k: int, readable: str, acl_args: list[Any], where: str,
           args: list[Any], m: int | None = None, stats: dict[str, int] | None = None) -> list[tuple[str, float]]:
    """The exact BM25 top k: with `m`, read through each term's top M postings, then (if that
    proves nothing) down to the thresholds its k-th score allows, when either proves it (see
    above); else, or without `m`, by reading every posting. `stats` (for benchmarks) counts which
    statement answered: `m1`, `m2` or `exact`."""
    answered = _impact_search(conn, query_text, k, readable, acl_args, where, args, m) if m else None
    how, rows = answered or ("exact", [])
    if stats is not None:
        stats[how] = stats.get(how, 0) + 1
    if answered:
        return [(r["id"], float(r["score"])) for r in rows if r["id"] is not None]
    params = [*acl_args, query_text, *acl_args, *acl_args, *args, k]
    return [(r["id"], float(r["score"])) for r in conn.execute(exact_sql(readable, where), params)]


def _impact_search(conn: Any, query_text: str, k: int, readable: str, acl_args: list[Any], where: str,
                   args: list[Any], m: int) -> tuple[str, list[dict[str, Any]]] | None:
    """The proven rows of the first read (`m1`) or the second (`m2`), or None: read every posting."""
    sql = impact_sql(readable, where)

    def read(terms: list[str], wts: list[float], limit: int) -> list[dict[str, Any]]:
        params = [*acl_args, query_text, *acl_args, limit, terms, wts, *acl_args, *args, k, k, k]
        return list(conn.execute(sql, params).fetchall())

    rows = read([], [], m)
    if proven(rows, k):
        return "m1", rows
    head, hits = rows[0], [r for r in rows if r["id"] is not None]
    if head["bail"] or len(hits) < k:
        return None  # a deeper read would refine at least as many chunks; no k-th score to aim below
    wts = thresholds(float(hits[k - 1]["score"]), [float(b) for b in head["bounds"]], [float(x) for x in head["scales"]])
    # at most 4M a term: a low threshold on a long list would cost more than reading it all
    rows = read(head["terms"], wts, 4 * m)
    return ("m2", rows) if proven(rows, k) else None
