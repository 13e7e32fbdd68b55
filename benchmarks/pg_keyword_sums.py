"""Two ways to drop the exact BM25 statement's sort, measured against it (issue 22): on a store kept
by `pg_scale.py --keep DIR`, the store's exact statement (each chunk's term scores summed in term
order, `sum(... ORDER BY term)`, which sorts every scored posting by chunk and term) against

- `slots`: one `sum(...) FILTER (WHERE slot = i)` per query term added in term order (the same
  floats, a hash aggregate instead of the sort), and
- `merge`: one index scan per term in chunk order under a UNION ALL, so that a Merge Append
  could hand the aggregate its postings already grouped (the terms and their idf read first).

Both give the exact statement's results, floats included; the script checks that on every query
and prints the p50 / p95 of each, which runs first alternating (the second finds the pages cached).

    .venv/bin/python benchmarks/pg_scale.py --rows 100000 --keep /tmp/pg100k --build-only
    .venv/bin/python benchmarks/pg_keyword_sums.py /tmp/pg100k --queries 60 [--explain]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import import_speed  # noqa: E402
import pg_keywords  # noqa: E402

from docket.store import pg_keywords as kw  # noqa: E402
from docket.store import postgres_read as pg  # noqa: E402
from docket.store.access import Principal  # noqa: E402
from docket.store.factory import open_store  # noqa: E402
from docket.store.protocol import Filters, fts_terms  # noqa: E402

_STATS = ("r AS (SELECT n, total_len FROM acl_classes {cls}), st AS (SELECT coalesce(sum(n), 0)::float8 AS n, "
          "greatest(1.0, coalesce(sum(total_len), 0)::float8 / greatest(1, coalesce(sum(n), 0))) AS avg FROM r)")


def _tail(sql: str, where: str) -> str:
    if where:
        return sql + (f"SELECT c.id, s.score FROM s JOIN chunks c ON c.rowid = s.chunk WHERE true {where} "
                      "ORDER BY s.score DESC, c.id LIMIT %s")
    return sql + ("SELECT c.id, top.score FROM (SELECT chunk, score FROM s ORDER BY score DESC, chunk "
                  "LIMIT %s) top JOIN chunks c ON c.rowid = top.chunk ORDER BY top.score DESC, c.id")


def _terms(conn: Any, text: str, readable: str, acl_args: list[Any]) -> list[tuple[str, float]]:
    """The query's terms in term order with their idf over the readable classes (as the exact statement's t)."""
    cls = f"WHERE id = ANY({readable})" if readable else ""
    df_cond = f"AND td.cls = ANY({readable})" if readable else ""
    sql = (f"WITH {_STATS.format(cls=cls)}, "
           "q AS (SELECT DISTINCT u.term FROM unnest(tsvector_to_array(to_tsvector('english', %s))) AS u(term)) "
           "SELECT q.term, ln(1 + ((SELECT n FROM st) - d.df + 0.5) / (d.df + 0.5)) AS idf FROM q CROSS JOIN LATERAL "
           f"(SELECT coalesce(sum(td.df), 0)::bigint AS df FROM term_df td WHERE td.term = q.term {df_cond}) d "
           "WHERE d.df > 0 ORDER BY q.term")
    return [(r["term"], r["idf"]) for r in conn.execute(sql, [*acl_args, text, *acl_args])]


def slots_sql(readable: str, where: str, n: int) -> str:
    cls = f"WHERE id = ANY({readable})" if readable else ""
    post = f"AND ct.cls = ANY({readable})" if readable else ""
    total = " + ".join(f"coalesce(sum({kw._SCORE}) FILTER (WHERE t.slot = {i}), 0)" for i in range(1, n + 1))
    return _tail(f"WITH {_STATS.format(cls=cls)}, "
                 "t AS MATERIALIZED (SELECT u.term, u.slot, u.idf FROM unnest(%s::text[], %s::float8[]) "
                 "WITH ORDINALITY AS u(term, idf, slot)), "
                 f"s AS (SELECT p.chunk, {total} AS score FROM t CROSS JOIN LATERAL "
                 f"(SELECT ct.chunk, ct.tf, ct.len FROM chunk_terms ct WHERE ct.term = t.term {post} OFFSET 0) p "
                 "GROUP BY p.chunk) ", where)


def merge_sql(readable: str, where: str, n: int) -> str:
    cls = f"WHERE id = ANY({readable})" if readable else ""
    post = f"AND ct.cls = ANY({readable})" if readable else ""
    branches = " UNION ALL ".join(
        f"(SELECT ct.chunk, %s::text AS term, %s::float8 AS idf, ct.tf, ct.len FROM chunk_terms ct "
        f"WHERE ct.term = %s {post} ORDER BY ct.chunk)" for _ in range(n))
    score = "p.idf * p.tf * 2.2 / (p.tf + 1.2 * (0.25 + 0.75 * p.len / (SELECT avg FROM st)))"
    return _tail(f"WITH {_STATS.format(cls=cls)}, "
                 f"s AS (SELECT p.chunk, sum({score} ORDER BY p.term) AS score FROM ({branches}) p GROUP BY p.chunk) ",
                 where)


def run(conn: Any, how: str, text: str, f: Filters, k: int = 100, explain: bool = False) -> list[Any]:
    readable, acl_args = pg._readable_sql(f)
    where, args = pg._where_sql(f, acl=False)
    pre = "EXPLAIN ANALYZE " if explain else ""
    if how == "exact":
        rows = conn.execute(pre + kw.exact_sql(readable, where), [*acl_args, text, *acl_args, *acl_args, *args, k])
    else:
        ti = _terms(conn, text, readable, acl_args)
        if not ti:
            return []
        if how == "slots":
            rows = conn.execute(pre + slots_sql(readable, where, len(ti)),
                                [*acl_args, [t for t, _ in ti], [i for _, i in ti], *acl_args, *args, k])
        else:
            params = [*acl_args] + [x for t, i in ti for x in (t, i, t, *acl_args)] + [*args, k]
            rows = conn.execute(pre + merge_sql(readable, where, len(ti)), params)
    if explain:
        return [r["QUERY PLAN"] for r in rows]
    return [(r["id"], float(r["score"])) for r in rows]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("keep", type=Path, help="the data directory pg_scale.py --keep built")
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--explain", action="store_true", help="print EXPLAIN ANALYZE of each for the longest question")
    a = ap.parse_args()
    import pgserver

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server = pgserver.get_server(a.keep, cleanup_mode="stop")
    s = open_store(import_speed._store_url(server.get_uri(), "scale"))
    conn = s._conn
    conn.execute("SET work_mem = '64MB'")  # what search_bm25 gives its statement
    qs = [" ".join(fts_terms(q)) for q in pg_keywords.questions()[: a.queries]]
    askers = [Filters(), Filters(principal=Principal("ann", frozenset({"finance"}))), Filters(unrestricted=True)]
    times: dict[str, list[float]] = {"exact": [], "slots": [], "merge": []}
    same = {"slots": 0, "merge": 0}
    n = 0
    for i, (f, q) in enumerate((f, q) for f in askers for q in qs):
        order = list(times)
        order = order[i % 3:] + order[: i % 3]
        got = {}
        for how in order:
            t = time.perf_counter()
            got[how] = run(conn, how, q, f)
            times[how].append(time.perf_counter() - t)
        n += 1
        for how in same:
            same[how] += got[how] == got["exact"]

    def p95(xs: list[float]) -> float:
        return 1000 * statistics.quantiles(xs, n=20)[18]

    print(f"{n} queries (k = 100, 3 principals); load average {os.getloadavg()[0]:.1f}")
    print("| statement | identical to exact | p50 ms | p95 ms | exact p50 / its p50 |")
    print("|---|---|---|---|---|")
    base = statistics.median(times["exact"])
    for how, xs in times.items():
        print(f"| {how} | {same.get(how, n)} of {n} | {1000 * statistics.median(xs):.1f} | {p95(xs):.1f} | "
              f"{base / statistics.median(xs):.2f}x |")
    if a.explain:
        q = max(qs, key=len)
        for how in times:
            print(f"\n# {how}, the longest question\n" + "\n".join(run(conn, how, q, Filters(), explain=True)))
    s.close()
    server.cleanup()


if __name__ == "__main__":
    main()
