"""The SQLite store's fast fetch and search paths answer exactly what a straightforward reference
does: the same chunks (every field, the vector bit for bit), the same hits in the same order with
the same scores, for every principal and filter. The references here read the file with plain SQL
and rank with plain numpy, the way the store did before its hot paths were tightened."""

from __future__ import annotations

import json
import sqlite3
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError
from store_cases import EMB, SEARCH_ACLS, SEARCH_ASKERS, SEARCH_QUERIES, SEARCH_WORDS, qvec, version

from docket.model import Chunk
from docket.store.protocol import Filters, _trusted_chunk, chunk_from_row
from docket.store.sqlite import SQLiteStore
from docket.store.terms import query_terms

WORDS, ACLS, ASKERS, QUERIES = SEARCH_WORDS, SEARCH_ACLS, SEARCH_ASKERS, SEARCH_QUERIES


def _texts(seed: int, n: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(3, 9)))) for _ in range(n)]


@pytest.fixture(params=["acl", "public"])
def path(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    """A small store: documents with every kind of acl (or, "public", none at all: the index's
    every-row-public path), dates, source types, metadata, a superseded version, repeated texts
    (exact score ties) and one deletion."""
    acls = ACLS if request.param == "acl" else [None]
    p = tmp_path / "s.db"
    s = SQLiteStore(p)
    s.set_meta({"embedder": EMB.name, "dim": str(EMB.dim)})
    for d in range(24):
        texts = _texts(d % 9, 4)  # documents 9 apart repeat each other: equal scores, ties by rowid
        dv = version(f"d{d}", 1, texts, acl=acls[d % len(acls)], when=date(2024, 1 + d % 12, 1) if d % 5 else None,
                     source_type=("wiki", "forum", None)[d % 3])
        if d % 4 == 0:
            dv.chunks = [c.model_copy(update={"metadata": {"team": f"t{d}", "n": d, "nested": {"k": [1, 2]}},
                                              "effective_to": date(2025, 1, 1), "trust": "trusted"})
                         for c in dv.chunks]
        s.write_version(dv)
    s.write_version(version("d1", 2, _texts(99, 3)))  # supersedes d1 v1
    s.delete("d23")
    s.close()
    return p


def _reference_chunks(p: Path) -> dict[str, Chunk]:
    """Every stored chunk, built by pydantic's own model_construct from plain SQL rows."""
    conn = sqlite3.connect(p)
    conn.row_factory = sqlite3.Row
    out = {}
    for r in conn.execute("SELECT * FROM chunks"):
        out[r["id"]] = Chunk.model_construct(
            id=r["id"], doc=r["doc"], text=r["text"], version=r["version"], status=r["status"],
            date=date.fromisoformat(r["date"]) if r["date"] else None,
            effective_to=date.fromisoformat(r["effective_to"]) if r["effective_to"] else None,
            title=r["title"] or "", section=r["section"] or "", position=r["position"],
            source_type=r["source_type"], trust=r["trust"],
            acl=tuple(json.loads(r["acl"])) if r["acl"] is not None else None,
            metadata=json.loads(r["metadata"]) if r["metadata"] else {},
            vector=tuple(np.frombuffer(r["vector"], dtype=np.float32).tolist()),
        )
    conn.close()
    return out


def _same_chunk(a: Chunk, b: Chunk) -> None:
    assert a == b
    assert list(a.__dict__) == list(b.__dict__)  # field order, as model_construct lays it out
    assert a.model_fields_set == b.model_fields_set
    assert a.__pydantic_extra__ == b.__pydantic_extra__ and a.__pydantic_private__ == b.__pydantic_private__
    assert a.model_dump() == b.model_dump() and repr(a) == repr(b)
    assert a.vector is not None and b.vector is not None
    assert np.array_equal(np.asarray(a.vector, dtype=np.float32), np.asarray(b.vector, dtype=np.float32))


def test_get_many_equals_the_reference(path: Path) -> None:
    ref = _reference_chunks(path)
    s = SQLiteStore(path)
    got = s.get_many([*ref, "missing", *list(ref)[:3]])
    assert set(got) == set(ref)
    for cid, c in ref.items():
        _same_chunk(got[cid], c)
    for c in s.chunks_of("d0", 1):
        _same_chunk(c, ref[c.id])
    s.close()


def test_fetched_chunks_behave_like_constructed_ones(path: Path) -> None:
    """A fetched chunk is a normal frozen model: copies, dumps, validates, refuses assignment."""
    s = SQLiteStore(path)
    c = s.get_many(["d0-v1-0"])["d0-v1-0"]
    assert c.metadata == {"team": "t0", "n": 0, "nested": {"k": [1, 2]}}
    copy = c.model_copy(update={"text": "other"})
    assert copy.text == "other" and copy.id == c.id and "text" in copy.model_fields_set
    assert Chunk.model_validate(c.model_dump()) == c
    with pytest.raises(ValidationError):
        c.text = "x"  # type: ignore[misc]
    s.close()


def test_trusted_chunk_matches_model_construct() -> None:
    fields: dict[str, Any] = dict(id="a", doc="d", text="t", version=2, status="current", date=date(2024, 1, 2),
                                  effective_to=None, title="T", section="", position=0, source_type=None,
                                  trust=None, acl=("user:x",), metadata={"k": 1}, vector=(0.5, 0.25))
    _same_chunk(_trusted_chunk(dict(fields)), Chunk.model_construct(**fields))
    # a dict that does not name every field falls back to model_construct (defaults filled in)
    partial = {"id": "a", "doc": "d", "text": "t"}
    assert _trusted_chunk(dict(partial)) == Chunk.model_construct(**partial)


def test_chunk_from_row_accepts_arrays_tuples_and_date_objects() -> None:
    row = {"id": "a", "doc": "d", "text": "t", "version": 1, "status": "current", "date": date(2024, 5, 1),
           "effective_to": "2025-01-01", "title": None, "section": None, "position": None, "source_type": None,
           "trust": None, "acl": '["group:g"]', "metadata": None}
    vec = np.asarray([0.1, 0.2], dtype=np.float32)
    a, b = chunk_from_row(row, vec), chunk_from_row(row, tuple(vec.tolist()))
    assert a == b and a.vector == tuple(vec.tolist())
    assert a.date == date(2024, 5, 1) and a.effective_to == date(2025, 1, 1)
    assert a.acl == ("group:g",) and a.metadata == {} and a.title == ""
    assert chunk_from_row(row, None).vector is None


# --- search ------------------------------------------------------------------------------------

_K1, _B = 1.2, 0.75
_POSTING = np.dtype([("term", "<i4"), ("tf", "<u2")])


class _Reference:
    """The store's rows read with plain SQL, ranked the straightforward way: every row scored,
    filters and the ACL checked row by row, sorted by score then rowid."""

    def __init__(self, p: Path) -> None:
        conn = sqlite3.connect(p)
        conn.row_factory = sqlite3.Row
        self.rows = conn.execute("SELECT * FROM chunks ORDER BY rowid").fetchall()
        self.acl = {r["rowid"]: set() for r in self.rows}
        for principal, chunk in conn.execute("SELECT principal, chunk FROM chunk_acl"):
            self.acl[chunk].add(principal)
        self.term_ids = {t: i for i, t in conn.execute("SELECT id, term FROM terms")}
        conn.close()

    def readable(self, r: sqlite3.Row, f: Filters) -> bool:
        names = f.acl_names
        return names is None or bool(r["public"]) or bool(self.acl[r["rowid"]] & set(names))

    def passes(self, r: sqlite3.Row, f: Filters) -> bool:
        day = date.fromisoformat(r["date"]) if r["date"] else None
        return (self.readable(r, f) and (not f.docs or r["doc"] in f.docs)
                and (not f.statuses or r["status"] in f.statuses)
                and (not f.source_types or r["source_type"] in f.source_types)
                and (f.date_from is None or (day is not None and day >= f.date_from))
                and (f.date_to is None or (day is not None and day <= f.date_to)))

    def dense(self, q: np.ndarray, k: int, f: Filters) -> list[tuple[str, float]]:
        rows = [r for r in self.rows if self.passes(r, f)]
        if not rows:
            return []
        mat = np.stack([np.frombuffer(r["vector"], dtype=np.float32) for r in rows])
        exact = (mat.astype(np.float64) * np.asarray(q, dtype=np.float32).astype(np.float64)).sum(axis=1)
        order = sorted(range(len(rows)), key=lambda i: (-exact[i], rows[i]["rowid"]))[:k]
        return [(rows[i]["id"], float(exact[i])) for i in order]

    def bm25(self, query: str, k: int, f: Filters) -> list[tuple[str, float]]:
        readable = [r for r in self.rows if self.readable(r, f)]
        if not readable:
            return []
        n = len(readable)
        avg = max(1.0, float(np.asarray([r["len"] for r in readable], dtype=np.float32).mean()))
        posts = {r["rowid"]: {int(t): float(tf) for t, tf in np.frombuffer(r["terms"], dtype=_POSTING)}
                 for r in readable}
        scores: dict[int, float] = {}
        for t in sorted(self.term_ids[w] for w in query_terms(query) if w in self.term_ids):
            holders = [r for r in readable if t in posts[r["rowid"]]]
            if not holders:
                continue
            idf = np.log1p((n - len(holders) + 0.5) / (len(holders) + 0.5))
            for r in holders:
                if not self.passes(r, f):
                    continue
                tf = np.float32(posts[r["rowid"]][t])
                length = np.float32(r["len"])
                add = idf * tf * (_K1 + 1) / (tf + _K1 * (1 - _B + _B * length / avg))
                scores[r["rowid"]] = scores.get(r["rowid"], 0.0) + float(add)
        ids = {r["rowid"]: r["id"] for r in self.rows}
        best = sorted((rid for rid, x in scores.items() if x > 0), key=lambda rid: (-scores[rid], rid))[:k]
        return [(ids[rid], scores[rid]) for rid in best]


def _check_searches(s: SQLiteStore, ref: _Reference, exact: bool = True) -> None:
    for f in ASKERS:
        for q in QUERIES:
            for k in (1, 3, 10, 500):
                for got, want in ((s.search_dense(qvec(q), k, f), ref.dense(qvec(q), k, f)),
                                  (s.search_bm25(q, k, f), ref.bm25(q, k, f))):
                    assert [c for c, _ in got] == [c for c, _ in want], (f, q, k)
                    if exact:
                        assert [x for _, x in got] == [x for _, x in want], (f, q, k)
                    else:
                        assert [x for _, x in got] == pytest.approx([x for _, x in want], rel=1e-6), (f, q, k)


def test_searches_equal_the_reference(path: Path) -> None:
    s = SQLiteStore(path)
    _check_searches(s, _Reference(path))
    with s.snapshot():  # inside one read transaction, as retrieve runs them
        _check_searches(s, _Reference(path))
    s.close()


def test_searches_equal_the_reference_after_writes_elsewhere(path: Path) -> None:
    """The warm index after another connection's writes (rows dead and appended, acl changed)."""
    s = SQLiteStore(path)
    s.search_dense(qvec("policy"), 3, Filters())  # loaded
    other = SQLiteStore(path)
    other.write_version(version("d2", 2, _texts(5, 4), acl=("group:finance",)))
    other.write_version(version("d30", 1, _texts(2, 3), acl=("user:bob",), source_type="wiki"))
    other.delete("d5")
    other.close()
    # scores within float32 rounding of the reference: the refreshed index averages lengths in its own row order
    _check_searches(s, _Reference(path), exact=False)
    s.close()


def test_searches_do_not_depend_on_the_blas_threads(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import docket.store.sqlite_search as sqlite_store

    for threads in (0, 2):
        monkeypatch.setattr(sqlite_store, "_DENSE_BLAS", sqlite_store._BlasThreads(threads))
        s = SQLiteStore(path)
        _check_searches(s, _Reference(path))
        s.close()


def test_searches_equal_the_reference_when_bm25_prunes(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pruned keyword search (store.sqlite_bm25) on every question of two terms or more."""
    import docket.store.sqlite_bm25 as bm25

    monkeypatch.setattr(bm25, "PRUNE_MIN_POSTINGS", 0)  # these stores hold a few hundred postings
    s = SQLiteStore(path)
    _check_searches(s, _Reference(path))
    s.close()
