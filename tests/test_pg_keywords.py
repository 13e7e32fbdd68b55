"""PostgreSQL keyword search through each term's top postings (docket.store.pg_keywords) gives
exactly what reading every posting gives, for every principal, filter and M: the same chunks,
the same order, the same floats; and it answers from the top M alone when the bound proves it.

The corpus is generated with Zipf-like word frequencies (frequent terms have many postings, so
small M values cut them), four kinds of ACL, two source types, and a deleted document."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest_pg import pg_server, pg_url  # noqa: F401
from store_cases import SEARCH_ACLS, SEARCH_ASKERS, version

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
    return [(r["id"], float(r["score"])) for r in store._conn.execute(pg_keywords.exact_sql(readable, where), params)]


def test_top_m_equals_reading_every_posting(pg_url: str) -> None:  # noqa: F811
    rng = np.random.default_rng(3)
    s = open_store(pg_url)
    for dv in _corpus(rng, 160):
        s.write_version(dv)
    s.delete("d7")
    assert float(s.meta()["bm25_avgdl"]) > 1
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
    assert s.keyword_stats.get("m4", 0) + s.keyword_stats.get("exact", 0) > 0
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
