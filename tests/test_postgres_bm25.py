"""PostgreSQL BM25 (docket.store.postgres.search_bm25) against two references, on a store with
every kind of ACL, dates, source types, repeated texts (exact score ties), a superseded version and
a deletion, for every principal and filter:

- BM25 worked out in Python from the raw postings and the ACL classes' statistics, each chunk's
  terms added in term order: the same chunks in the same order, the same scores;
- the statement search_bm25 used before (verbatim below: the postings read once into a CTE and
  hash-joined to their terms' idf): the same chunks in the same order.

And the floats do not depend on the plan PostgreSQL picks (the statement before summed each
chunk's terms in whatever order its plan read them).
"""

from __future__ import annotations

import math
from datetime import date
from typing import Any

import numpy as np
import pytest
from conftest_pg import pg_server, pg_url  # noqa: F401
from store_cases import EMB, SEARCH_ACLS, SEARCH_ASKERS, SEARCH_QUERIES, SEARCH_WORDS, version

from docket.store import postgres as pg
from docket.store.factory import open_store
from docket.store.protocol import Filters, fts_terms

pytestmark = pytest.mark.postgres

WORDS = [*SEARCH_WORDS, "refunds", "cancelled", "planning"]  # stems shared with the words above
ACLS, ASKERS = SEARCH_ACLS, SEARCH_ASKERS
QUERIES = [*SEARCH_QUERIES, "refunds cancelled planning policy annual window"]


def _reference(store: Any, query: str, k: int, filters: Filters) -> list[tuple[str, float]]:
    """search_bm25 as it was before the per-term LATERAL statement."""
    terms = fts_terms(query)
    if not terms or k <= 0:
        return []
    readable, acl_args = pg._readable_sql(filters)
    cls_cond = f"WHERE id = ANY({readable})" if readable else ""
    post_cond = f"AND ct.cls = ANY({readable})" if readable else ""
    where, args = pg._where_sql(filters, acl=False)
    sql = (
        f"WITH r AS (SELECT n, total_len FROM acl_classes {cls_cond}), "
        "st AS (SELECT coalesce(sum(n), 0)::float8 AS n, "
        "greatest(1.0, coalesce(sum(total_len), 0)::float8 / greatest(1, coalesce(sum(n), 0))) AS avg FROM r), "
        "q AS (SELECT tsvector_to_array(to_tsvector('english', %s)) AS a), "
        "p AS (SELECT ct.term, ct.chunk, ct.tf, ct.len FROM chunk_terms ct "
        f"WHERE ct.term = ANY((SELECT a FROM q)::text[]) {post_cond}), "
        "t AS (SELECT term, ln(1 + ((SELECT n FROM st) - count(*) + 0.5) / (count(*) + 0.5)) AS idf FROM p GROUP BY term), "
        "s AS (SELECT p.chunk, sum(t.idf * p.tf * 2.2 / (p.tf + 1.2 * (0.25 + 0.75 * p.len / (SELECT avg FROM st)))) "
        "AS score FROM p JOIN t ON t.term = p.term GROUP BY p.chunk) "
    )
    params: list[Any] = [*acl_args, " ".join(terms), *acl_args]
    if where:
        sql += f"SELECT c.id, s.score FROM s JOIN chunks c ON c.rowid = s.chunk WHERE true {where} " \
            "ORDER BY s.score DESC, c.id LIMIT %s"
        params += [*args, k]
    else:
        sql += "SELECT c.id, top.score FROM (SELECT chunk, score FROM s ORDER BY score DESC, chunk " \
            "LIMIT %s) top JOIN chunks c ON c.rowid = top.chunk ORDER BY top.score DESC, c.id"
        params += [k]
    return [(r["id"], float(r["score"])) for r in store._conn.execute(sql, params)]


def _python_bm25(store: Any, query: str, k: int, filters: Filters) -> list[tuple[str, float]]:
    """BM25 from the raw rows, in Python: idf and average length over the readable ACL classes,
    each chunk's terms summed in term order, the other filters applied to the scored chunks."""
    conn = store._conn
    terms = fts_terms(query)
    if not terms or k <= 0:
        return []
    lexemes = [r["t"] for r in conn.execute(
        "SELECT DISTINCT u.t FROM unnest(tsvector_to_array(to_tsvector('english', %s))) AS u(t) ORDER BY u.t",
        (" ".join(terms),))]
    readable, acl_args = pg._readable_sql(filters)
    classes = None if not readable else {r["a"] for r in conn.execute(f"SELECT unnest({readable}) AS a", acl_args)}
    stats = [r for r in conn.execute("SELECT id, n, total_len FROM acl_classes") if classes is None or r["id"] in classes]
    n = float(sum(r["n"] for r in stats))
    avg = max(1.0, float(sum(r["total_len"] for r in stats)) / max(1, sum(r["n"] for r in stats)))
    postings = [r for r in conn.execute("SELECT term, chunk, tf, len, cls FROM chunk_terms WHERE term = ANY(%s)", (lexemes,))
                if classes is None or r["cls"] in classes]
    df = {t: sum(1 for r in postings if r["term"] == t) for t in lexemes}
    scores: dict[int, float] = {}
    for t in lexemes:  # term order, then every posting of the term
        if not df[t]:
            continue
        idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
        for r in postings:
            if r["term"] == t:
                tf, ln = float(r["tf"]), float(r["len"])
                scores[r["chunk"]] = scores.get(r["chunk"], 0.0) + idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * ln / avg))
    where, args = pg._where_sql(filters, acl=False)
    ok = {r["rowid"]: r["id"] for r in conn.execute(f"SELECT c.rowid, c.id FROM chunks c WHERE true {where}", args)}
    if where:  # ties broken by chunk id
        return sorted(((ok[c], sc) for c, sc in scores.items() if c in ok), key=lambda x: (-x[1], x[0]))[:k]
    # no other filter: the k best by score, ties by row (the cut made before the join), then ordered by id
    top = sorted(scores.items(), key=lambda x: (-x[1], x[0]))[:k]
    return sorted(((ok[c], sc) for c, sc in top), key=lambda x: (-x[1], x[0]))


def _store(url: str) -> Any:
    s = open_store(url)
    s.set_meta({"embedder": EMB.name, "dim": str(EMB.dim)})
    s.set_principal("ann", ["finance"])
    for d in range(24):
        texts = _texts(d % 9, 4)  # documents 9 apart repeat each other: equal scores, ties by chunk id
        s.write_version(version(f"d{d}", 1, texts, acl=ACLS[d % len(ACLS)],
                                when=date(2024, 1 + d % 12, 1) if d % 5 else None, source_type=("wiki", "forum", None)[d % 3]))
    s.write_version(version("d1", 2, _texts(99, 3)))  # supersedes d1 v1
    s.delete("d23")
    return s


def _close(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> bool:
    return [i for i, _ in a] == [i for i, _ in b] and all(math.isclose(x, y, rel_tol=1e-12) for (_, x), (_, y) in zip(a, b))


def _texts(seed: int, n: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(3, 12)))) for _ in range(n)]


def test_bm25_equals_python_and_the_statement_it_replaced(pg_url: str) -> None:  # noqa: F811
    s = _store(pg_url)
    compared = 0
    for f in ASKERS:
        for q in QUERIES:
            for k in (1, 5, 100):
                got = s.search_bm25(q, k, f)
                assert _close(got, _python_bm25(s, q, k, f)), (q, k, f)
                assert [i for i, _ in got] == [i for i, _ in _reference(s, q, k, f)], (q, k, f)
                compared += bool(got)
    assert compared > 100  # most cases found something to rank
    s.close()


@pytest.mark.parametrize("setting", ["enable_hashagg", "enable_sort", "enable_nestloop", "enable_indexonlyscan"])
def test_bm25_floats_do_not_depend_on_the_plan(pg_url: str, setting: str) -> None:  # noqa: F811
    s = _store(pg_url)
    cases = [(q, f) for q in QUERIES for f in ASKERS[:5]]
    before = [s.search_bm25(q, 100, f) for q, f in cases]
    s._conn.execute(f"SET {setting} = off")
    try:
        assert [s.search_bm25(q, 100, f) for q, f in cases] == before
    finally:
        s._conn.execute(f"RESET {setting}")
    s.close()
