"""The SQLite store's warm index follows writes made through another connection (another
process, in production) by applying the change log, and answers exactly as a freshly loaded
index would: same ids, same order, same scores, for every principal and filter."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_cases import EMB, qvec, version

from docket.store.protocol import Filters, Principal
from docket.store.sqlite import SQLiteStore

WORDS = ["refund", "window", "annual", "plans", "salary", "bands", "finance", "policy", "forum", "cancel"]
ACLS = [None, ("group:finance",), ("user:ann",), ("group:hr", "user:bob")]
ASKERS = [
    Filters(),
    Filters(principal=Principal("ann", frozenset({"finance"}))),
    Filters(principal=Principal("bob")),
    Filters(unrestricted=True),
    Filters(statuses=("current",), principal=Principal("ann")),
    Filters(docs=("d1", "d3")),
]
QUERIES = ["refund window", "salary bands finance", "annual plans cancel", "policy"]


def _open(path: Path) -> SQLiteStore:
    s = SQLiteStore(path)
    s.set_meta({"embedder": EMB.name, "dim": str(EMB.dim)})
    return s


def _texts(seed: int, n: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=6)) for _ in range(n)]


def _answers(s: SQLiteStore) -> list[list[tuple[str, float]]]:
    out = []
    for f in ASKERS:
        for q in QUERIES:
            out.append([(c, round(x, 5)) for c, x in s.search_dense(qvec(q), 8, f)])
            out.append([(c, round(x, 5)) for c, x in s.search_bm25(q, 8, f)])
    return out


def _seed_store(path: Path, docs: int = 40) -> None:
    s = _open(path)
    for d in range(docs):
        s.write_version(version(f"d{d}", 1, _texts(d, 3), acl=ACLS[d % len(ACLS)]))
    s.close()


def apply_op(writer: SQLiteStore, kind: str, d: int, seed: int) -> None:
    """One write of OPS to document d{d}."""
    doc = f"d{d}"
    have = [v.version for v in writer.stored_versions(doc)]
    if kind == "delete":
        writer.delete(doc)
    elif kind == "rewrite" and have:  # the same version written again, other text
        writer.write_version(version(doc, max(have), _texts(seed, 2), acl=ACLS[seed % len(ACLS)]))
    elif kind == "acl" and have:  # the same rows, another ACL: no count changes
        writer.write_version(version(doc, max(have), _texts(d, 3), acl=ACLS[(seed + 1) % len(ACLS)]))
    else:  # add or a new version (the older one becomes superseded)
        writer.write_version(version(doc, max(have, default=0) + 1, _texts(seed, 1 + seed % 3),
                                     acl=ACLS[seed % len(ACLS)]))


# one write: (kind, document, seed)
OPS = st.lists(st.tuples(st.sampled_from(["add", "new_version", "rewrite", "delete", "acl"]),
                         st.integers(0, 45), st.integers(0, 1000)), min_size=1, max_size=12)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_warm_index_equals_a_fresh_load_after_any_writes(tmp_path_factory: pytest.TempPathFactory, ops) -> None:  # noqa: ANN001
    path = tmp_path_factory.mktemp("refresh") / "s.db"
    _seed_store(path)
    reader, writer = _open(path), _open(path)
    _answers(reader)  # warm
    base = reader._index
    assert base is not None
    for kind, d, seed in ops:
        apply_op(writer, kind, d, seed)
        warm = _answers(reader)
        cold = _open(path)
        assert warm == _answers(cold)
        assert reader.count() == cold.count()
        cold.close()
    assert reader._index is not None and reader._index.base_rows == base.base_rows  # refreshed, not reloaded
    reader.close()
    writer.close()


def test_a_refresh_reads_only_what_changed(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _seed_store(path, docs=200)
    reader, writer = _open(path), _open(path)
    reader.search_bm25("refund", 5, Filters())
    first = reader._index
    writer.write_version(version("d7", 2, ["refund window of thirty days"]))
    hits = reader.search_bm25("thirty days", 5, Filters())
    assert hits[0][0] == "d7-v2-0"
    m = reader._index
    assert m is not None and first is not None
    assert m is not first and m.base_rows == first.base_rows == 600
    assert len(m.ids) == 600 + 1  # v2's one row (v1's rows are unchanged: no status is rewritten at index time)
    assert first.generation != m.generation and len(first.ids) == 600  # the old index is left as it was
    assert {c for c, _ in reader.search_dense(qvec("refund"), 600, Filters(unrestricted=True))} >= {"d7-v2-0"}
    reader.close()
    writer.close()


def test_heavy_change_reloads_in_full(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _seed_store(path, docs=400)  # 1,200 rows
    reader, writer = _open(path), _open(path)
    reader.search_bm25("refund", 5, Filters())
    for d in range(200):  # every other document gets a new version: most rows change
        writer.write_version(version(f"d{d}", 2, _texts(d + 7, 1)))
    reader.search_bm25("refund", 5, Filters())
    m = reader._index
    assert m is not None and m.base_rows == len(m.ids) == writer.count() and m.alive is None


def test_a_pruned_log_means_a_full_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import docket.store.sqlite_write as sq

    path = tmp_path / "s.db"
    _seed_store(path, docs=20)
    reader, writer = _open(path), _open(path)
    reader.search_bm25("refund", 5, Filters())
    monkeypatch.setattr(sq, "_LOG_KEEP", 1)
    writer.write_version(version("d3", 2, ["a new refund rule"]))
    writer.write_version(version("d4", 2, ["another refund rule"]))
    assert [c for c, _ in reader.search_bm25("another refund rule", 1, Filters())] == ["d4-v2-0"]
    m = reader._index
    assert m is not None and m.alive is None and m.base_rows == writer.count()


def test_a_store_made_before_the_log_gets_it_on_open(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "s.db"
    _seed_store(path, docs=5)
    conn = sqlite3.connect(path)
    conn.executescript("DROP TRIGGER chunk_log_insert; DROP TRIGGER chunk_log_delete; DROP TRIGGER chunk_log_update;"
                       "DROP TRIGGER chunk_log_acl_insert; DROP TRIGGER chunk_log_acl_delete; DROP TABLE chunk_log;")
    conn.close()
    s = _open(path)
    s.write_version(version("d9", 1, ["refund window"]))
    n = sqlite3.connect(path).execute("SELECT count(*) FROM chunk_log").fetchone()[0]
    assert n == 1
    s.close()


def test_equal_scores_are_ordered_by_row_whatever_the_refresh_history(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    s = _open(path)
    for d in range(6):  # the same text six times: equal vectors, equal BM25
        s.write_version(version(f"c{d}", 1, ["identical refund text"]))
    reader = _open(path)
    reader.search_dense(qvec("refund"), 3, Filters())
    s.write_version(version("c0", 1, ["identical refund text"]))  # c0 rewritten: appended at the end
    warm = [c for c, _ in reader.search_dense(qvec("identical refund text"), 3, Filters())]
    cold = [c for c, _ in _open(path).search_dense(qvec("identical refund text"), 3, Filters())]
    assert warm == cold


def test_a_refresh_reads_the_contexts_of_new_chunks(tmp_path: Path) -> None:
    """A chunk written with an index-time context (index --contextualize) by another connection is
    found by a word only its context has, in the warm index as in a fresh load."""
    from dataclasses import replace

    path = tmp_path / "s.db"
    _seed_store(path, docs=20)
    reader, writer = _open(path), _open(path)
    reader.search_bm25("refund", 5, Filters())  # warm
    dv = version("d3", 2, ["it is waived in some member states"])
    writer.write_version(replace(dv, contexts=["Nimbus early-termination fee: the EU exemption"]))
    warm = reader.search_bm25("termination exemption", 5, Filters())
    assert warm and warm[0][0] == "d3-v2-0"
    cold = _open(path)
    assert [(c, round(x, 5)) for c, x in cold.search_bm25("termination exemption", 5, Filters())] == \
        [(c, round(x, 5)) for c, x in warm]
    for s in (reader, writer, cold):
        s.close()
