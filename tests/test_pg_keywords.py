"""PostgreSQL keyword search through each term's top postings (docket.store.pg_keywords) gives
exactly what reading every posting gives, for every principal, filter and M: the same chunks,
the same order, the same floats; and it answers from the top M alone when the bound proves it.

The corpus is generated with Zipf-like word frequencies (frequent terms have many postings, so
small M values cut them), four kinds of ACL, two source types, and a deleted document."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest_pg import pg_server, pg_url, term_df_mismatch  # noqa: F401
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_cases import SEARCH_ACLS, SEARCH_ASKERS, version

from docket.errors import InputError
from docket.store import pg_keywords
from docket.store import postgres as pg
from docket.store.access import may_read
from docket.store.factory import open_store
from docket.store.protocol import Filters, fts_terms

pytestmark = pytest.mark.postgres

VOCAB = [f"w{i}" for i in range(60)] + ["refund", "window", "annual", "salary", "policy"]


def _corpus(rng: np.random.Generator, n_docs: int) -> list[Any]:
    p = 1.0 / np.arange(1, len(VOCAB) + 1)
    p /= p.sum()
    out = []
    for d in range(n_docs):
        texts = [" ".join(rng.choice(VOCAB, size=int(rng.integers(3, 30)), p=p)) for _ in range(3)]
        out.append(version(f"d{d}", 1, texts, acl=SEARCH_ACLS[d % len(SEARCH_ACLS)],
                           source_type="faq" if d % 3 else "wiki"))
    return out


def _exact(store: Any, query: str, k: int, f: Filters) -> list[tuple[str, float]]:
    readable, acl_args = pg._readable_sql(f)
    where, args = pg._where_sql(f, acl=False)
    params = [*acl_args, " ".join(fts_terms(query)), *acl_args, *acl_args, *args, k]
    return [(r["id"], float(r["score"])) for r in store._conn.execute(pg_keywords.exact_sql(readable, where, counted=True), params)]


def test_top_m_equals_reading_every_posting(pg_url: str) -> None:  # noqa: F811
    rng = np.random.default_rng(3)
    s = open_store(pg_url)
    for dv in _corpus(rng, 160):
        s.write_version(dv)
    s.delete("d7")
    assert float(s.meta()["bm25_avgdl"]) > 1
    assert term_df_mismatch(s._conn) == []
    queries = ["w0 w1", "w0 w5 w30", "refund window w2", "w1 w2 w3 w4 w5 w6", "salary", "w59 w0", "nothing here"]
    askers = [*SEARCH_ASKERS, Filters(source_types=("wiki",), principal=SEARCH_ASKERS[1].principal)]
    for m in (1, 4, 30, None):
        s.keyword_m = m
        for f in askers:
            for q in queries:
                for k in (1, 10, 100):
                    got = s.search_bm25(q, k, f)
                    assert got == _exact(s, q, k, f), (m, f, q, k)
                    if not f.unrestricted:
                        chunks = s.get_many([cid for cid, _ in got])
                        assert all(may_read(f.principal, chunks[cid].acl) for cid, _ in got)
    # both ways of answering were taken: proofs from the top M, and the fallbacks
    assert s.keyword_stats.get("m1", 0) > 0
    assert s.keyword_stats.get("m2", 0) > 0  # the second read, down to the thresholds, proved some
    assert s.keyword_stats.get("exact", 0) > 0
    s.close()


def test_impacts_written_by_index_and_import_agree(pg_url: str, tmp_path: Any) -> None:  # noqa: F811
    """A posting's stored impact is its BM25 tf part with the store's A0, whichever path wrote it."""
    s = open_store(pg_url)
    for dv in _corpus(np.random.default_rng(5), 20):
        s.write_version(dv)
    a0 = float(s.meta()["bm25_avgdl"])
    rows = s._conn.execute("SELECT tf, len, w FROM chunk_terms").fetchall()
    assert rows
    for r in rows:
        want = r["tf"] * 2.2 / (r["tf"] + 1.2 * (0.25 + 0.75 * r["len"] / a0))
        assert abs(r["w"] - want) < 1e-5 * want
    s.close()


# --- the stored document frequencies (term_df, schema 6) ------------------------------------------

_counter = iter(range(10**6))


def _fresh(server: str) -> str:
    import psycopg

    name = f"kw_df_{next(_counter)}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    return f"{server}{'&' if '?' in server else '?'}options=-csearch_path%3D{name}%2Cpublic"


_WORDS = ["refund", "window", "annual", "salary", "policy", "w1", "w2", "w3"]
#: one step on a store: write (doc, version, texts, acl index), delete a document, delete a version
_steps = st.lists(st.one_of(
    st.tuples(st.just("write"), st.integers(0, 3), st.integers(1, 2),
              st.lists(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=6).map(" ".join), min_size=1, max_size=3),
              st.integers(0, len(SEARCH_ACLS) - 1)),
    st.tuples(st.just("delete"), st.integers(0, 3)),
    st.tuples(st.just("delete_version"), st.integers(0, 3), st.integers(1, 2)),
), min_size=1, max_size=8)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(steps=_steps)
def test_stored_document_frequencies_follow_every_write(pg_server: str, steps: list[tuple[Any, ...]]) -> None:  # noqa: F811
    """Whatever writes, re-versions (a changed ACL moves postings between classes) and deletes
    came before, each term's stored df per ACL class is the count of its postings, and keyword
    search built on it gives exactly the ranking and floats of counting (top M or every posting)."""
    s = open_store(_fresh(pg_server))
    try:
        for step in steps:
            if step[0] == "write":
                _, d, v, texts, a = step
                try:
                    s.write_version(version(f"d{d}", v, texts, acl=SEARCH_ACLS[a]))
                except InputError:  # a current version below a stored one is refused, and nothing written
                    pass
            elif step[0] == "delete":
                s.delete(f"d{step[1]}")
            else:
                s.delete(f"d{step[1]}", step[2])
        if not s._chunks_ready():
            return
        assert term_df_mismatch(s._conn) == []
        for m in (2, None):
            s.keyword_m = m
            for f in SEARCH_ASKERS[:5]:
                for q in ("refund window", "w1 w2 w3 policy", "salary"):
                    assert s.search_bm25(q, 3, f) == _exact(s, q, 3, f), (m, f, q)
    finally:
        s.close()


def test_a_schema_5_store_gets_its_document_frequencies_counted(pg_url: str) -> None:  # noqa: F811
    s = open_store(pg_url)
    for dv in _corpus(np.random.default_rng(7), 12):
        s.write_version(dv)
    want = s._conn.execute("SELECT term, cls, df FROM term_df WHERE df <> 0 ORDER BY term, cls").fetchall()
    s._conn.execute("DROP TABLE term_df")  # what a store written by schema 5 looks like
    s._conn.execute("UPDATE meta SET value = '5' WHERE key = 'schema'")
    s.close()
    s = open_store(pg_url)
    assert s.meta()["schema"] == str(pg.SCHEMA_VERSION)
    assert s._conn.execute("SELECT term, cls, df FROM term_df ORDER BY term, cls").fetchall() == want
    assert term_df_mismatch(s._conn) == []
    s.write_version(version("late", 1, ["refund window policy"]))  # and the migrated store keeps them
    assert term_df_mismatch(s._conn) == []
    s.close()


@given(theta=st.floats(0.01, 100), terms=st.lists(st.tuples(st.floats(0.001, 50), st.floats(0.01, 20)), min_size=1,
                                                  max_size=12))
def test_thresholds_keep_what_no_read_holds_below_the_kth_score(theta: float, terms: list[tuple[float, float]]) -> None:
    """Whatever the bounds: each term's share is at most its bound, none negative, and together
    they stay below θ with room for the proof's float slack."""
    bounds, scales = [b for b, _ in terms], [x for _, x in terms]
    wts = pg_keywords.thresholds(theta, bounds, scales)
    shares = [w * x for w, x in zip(wts, scales, strict=True)]
    assert all(0 <= sh <= b * (1 + 1e-12) for sh, b in zip(shares, bounds, strict=True))
    assert sum(shares) * pg_keywords._SLACK < theta


def test_keyword_search_raises_work_mem_only_for_itself(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """The sorts get 64 MB during the search; the session's setting is what it was after it, inside
    a snapshot too, and a larger setting is never lowered."""
    s = open_store(pg_url)
    s.write_version(version("d", 1, ["refund window policy", "annual salary"]))
    seen: list[str] = []
    real = pg_keywords.search

    def spy(conn: Any, *a: Any, **kw: Any) -> Any:
        seen.append(conn.execute("SELECT current_setting('work_mem') AS v").fetchone()["v"])
        return real(conn, *a, **kw)

    monkeypatch.setattr(pg_keywords, "search", spy)
    s._conn.execute("SET work_mem = '4MB'")
    assert s.search_bm25("refund", 5, Filters())
    with s.snapshot():
        s.search_bm25("refund", 5, Filters())
        assert s._conn.execute("SELECT current_setting('work_mem') AS v").fetchone()["v"] == "4MB"
    assert s._conn.execute("SELECT current_setting('work_mem') AS v").fetchone()["v"] == "4MB"
    s._conn.execute("SET work_mem = '256MB'")
    s.search_bm25("refund", 5, Filters())
    assert s._conn.execute("SELECT current_setting('work_mem') AS v").fetchone()["v"] == "256MB"
    assert seen == ["64MB", "64MB", "256MB"]
    s.close()
