"""`docket import` (docket.store.importer, bulk_sqlite, bulk_postgres): Parquet and JSONL files
with vectors into a new SQLite or PostgreSQL store, every kind of bad row refused in one line
naming the row and the field, and nothing of a refused file stored."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest_pg import pg_server, pg_url, term_df_mismatch  # noqa: F401

from docket.errors import InputError
from docket.store import importer
from docket.store.access import Principal
from docket.store.bulk import import_file
from docket.store.factory import open_store
from docket.store.protocol import Filters

DIM = 16
EMB = ("hash-bow", DIM)
WORDS = ["refund", "window", "annual", "plans", "salary", "bands", "finance", "policy", "forum", "cancel"]


def rows(n: int = 40) -> list[dict[str, Any]]:
    rng = np.random.default_rng(7)
    out = []
    for i in range(n):
        v = rng.normal(size=DIM)
        words = [WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(4 + i % 5)]
        rec: dict[str, Any] = {"id": f"c{i}", "doc": f"d{i // 4}", "text": " ".join(words) + f" item{i}",
                               "vector": (v / np.linalg.norm(v)).tolist(), "position": i % 4}
        if i % 4 == 1:
            rec["acl"] = ["group:finance"]
        if i % 4 == 2:
            rec["acl"] = ["user:ann", "hr"]
        if i % 8 == 3:
            rec["tokens"] = 11
        if i // 4 == 2:
            rec["version"], rec["status"], rec["date"] = 2, "current", "2024-05-01"
        if i == 5:
            rec["metadata"] = {"team": "ops"}
            rec["title"] = "Refunds"
        out.append(rec)
    return out


def write(path: Path, recs: list[dict[str, Any]], fmt: str) -> Path:
    if fmt == "jsonl":
        path = path.with_suffix(".jsonl")
        path.write_text("".join(json.dumps(r) + "\n" for r in recs))
        return path
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = path.with_suffix(".parquet")
    cols = sorted({k for r in recs for k in r})
    table = {k: [r.get(k) for r in recs] for k in cols}
    if "metadata" in table:
        table["metadata"] = [json.dumps(m) if m is not None else None for m in table["metadata"]]
        table.pop("metadata")  # Parquet metadata as a struct is writer-specific: the JSONL path covers it
    pq.write_table(pa.table(table), path)
    return path


@pytest.fixture(params=["sqlite", "postgres"])
def location(request: Any, tmp_path: Path) -> str:
    if request.param == "postgres":
        request.applymarker(pytest.mark.postgres)
        return str(request.getfixturevalue("pg_url"))
    return str(tmp_path / "s.db")


def _empty(loc: str) -> None:
    with open_store(loc) as s:  # type: ignore[attr-defined]
        assert s.count() == 0
        assert s.documents() == []
        assert "embedder" not in s.meta() and "bm25_avgdl" not in s.meta()


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_import_happy_path(location: str, tmp_path: Path, fmt: str) -> None:
    recs = rows()
    path = write(tmp_path / "in", recs, fmt)
    with open_store(location) as s:  # type: ignore[attr-defined]
        rep = import_file(s, path, embedder=EMB)
        assert (rep.rows, rep.versions, rep.documents) == (40, 10, 10)
        assert s.count() == 40
        assert s.meta()["embedder"] == "hash-bow" and s.meta()["dim"] == str(DIM)
        c = s.get("c5")
        assert c is not None and c.acl == ("group:finance",) and c.position == 1
        if fmt == "jsonl":
            assert c.metadata == {"team": "ops"} and c.title == "Refunds"
        v2 = s.stored_versions("d2")
        assert [(v.version, v.status, v.date, v.n_chunks) for v in v2] == [(2, "current", date(2024, 5, 1), 4)]
        assert s.get("c10").version == 2  # type: ignore[union-attr]
        # the vectors are the file's: each chunk is its own nearest neighbour
        for r in recs[:8]:
            hit = s.search_dense(np.asarray(r["vector"], dtype=np.float32), 1, Filters(unrestricted=True))
            assert hit[0][0] == r["id"]
        # keyword search and access control over the imported rows
        anon = {cid for cid, _ in s.search_bm25("item5 refund", 50, Filters())}
        assert "c5" not in anon and "c4" in anon
        ann = {cid for cid, _ in s.search_bm25("item5 item6", 50, Filters(principal=Principal("ann", frozenset({"finance"}))))}
        assert {"c5", "c6"} <= ann
        bob = {cid for cid, _ in s.search_bm25("item5 item6", 50, Filters(principal=Principal("bob", frozenset({"hr"}))))}
        assert bob == {"c6"}
        if not location.endswith(".db"):  # PostgreSQL: the document frequencies keyword search sums
            assert s._conn.execute("SELECT count(*) AS n FROM term_df").fetchone()["n"] > 0
            assert term_df_mismatch(s._conn) == []


BAD = [
    ("missing field", lambda r: r[12].pop("text"), 13, "text"),
    ("missing vector", lambda r: r[3].pop("vector"), 4, "vector"),
    ("wrong type", lambda r: r[7].update(position="three"), 8, "position"),
    ("wrong type of id", lambda r: r[9].update(id=12), 10, "id"),
    ("wrong dimension", lambda r: r[20].update(vector=r[20]["vector"][:-1]), 21, "vector"),
    ("NaN", lambda r: r[30]["vector"].__setitem__(2, float("nan")), 31, "vector"),
    ("duplicate id", lambda r: r[33].update(id="c2"), 34, "id"),
    ("bad ACL", lambda r: r[38].update(acl=["user:"]), 39, "acl"),
    ("empty ACL entry", lambda r: r[37].update(acl=[""]), 38, "acl"),
    ("status differs in a version", lambda r: r[9].update(status="draft"), 10, "status"),
    ("bad tokens", lambda r: r[6].update(tokens=-1), 7, "tokens"),
    ("bad date", lambda r: r[14].update(date="May 5th"), 15, "date"),
    ("all-zero vector", lambda r: r[25].update(vector=[0.0] * DIM), 26, "vector"),
    ("beyond float32", lambda r: r[27]["vector"].__setitem__(0, 1e39), 28, "vector"),
    ("too small to have a length", lambda r: r[29].update(vector=[1e-46] * DIM), 30, "vector"),
    ("integer too large for a float", lambda r: r[31]["vector"].__setitem__(3, 10**400), 32, "vector"),
    # a key spelling a field: as metadata it would leave the chunk readable by everyone
    ("ACL spelled in capitals", lambda r: r[17].update(ACL=["hr"]), 18, "acl"),
    ("Status spelled in capitals", lambda r: r[5].update(Status="superseded"), 6, "status"),
    ("status not a word", lambda r: r[11].update(status=3), 12, "status"),
]


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
@pytest.mark.parametrize(("name", "spoil", "row", "field"), BAD, ids=[b[0] for b in BAD])
def test_bad_row_is_named_and_nothing_is_written(location: str, tmp_path: Path, fmt: str, name: str, spoil: Any,
                                                 row: int, field: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if fmt == "parquet" and name in ("wrong type", "wrong type of id", "NaN", "integer too large for a float",
                                     "status not a word"):
        pytest.skip("a Parquet column has one type; NaN: covered below with an explicit array")
    monkeypatch.setattr(importer, "BATCH_ROWS", 8)  # the bad row comes after batches already sent
    recs = rows()
    spoil(recs)
    path = write(tmp_path / "in", recs, fmt)
    with open_store(location) as s:  # type: ignore[attr-defined]
        with pytest.raises(InputError) as e:
            import_file(s, path, embedder=EMB)
    msg = str(e.value)
    assert f"row {row}:" in msg and f"'{field}'" in msg and "\n" not in msg, msg
    _empty(location)


def test_parquet_nan_and_dimension(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    recs = rows(10)
    vecs = [r["vector"] for r in recs]
    vecs[6] = [float("nan")] * DIM
    path = tmp_path / "nan.parquet"
    pq.write_table(pa.table({"id": [r["id"] for r in recs], "doc": [r["doc"] for r in recs],
                             "text": [r["text"] for r in recs], "vector": vecs}), path)
    with open_store(str(tmp_path / "s.db")) as s:  # type: ignore[attr-defined]
        with pytest.raises(InputError, match=r"row 7: holds NaN"):
            import_file(s, path, embedder=EMB)
        with pytest.raises(InputError, match=r"row 1: has 16 values, but the store's embedder 'x' has dimension 384"):
            import_file(s, path, embedder=("x", 384))


@pytest.mark.parametrize("slow", [False, True], ids=["batch", "row-by-row"])
@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_vectors_off_unit_length_are_scaled_and_counted(location: str, tmp_path: Path, fmt: str, slow: bool,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The stores score by inner product (the cosine over unit vectors, the floor's scale), so a
    vector off unit length is stored scaled to it, as `docket index` does, and the report counts
    it; a unit vector is stored as given, byte for byte; the batch checks and the row-by-row
    checks do the same."""
    monkeypatch.setattr(importer, "BATCH_ROWS", 8)
    if slow:
        _forced_slow(monkeypatch)
    recs = rows()
    scaled = [i for i in range(len(recs)) if i % 3 == 0]
    for i in scaled:
        recs[i]["vector"] = [x * (2.5 + i) for x in recs[i]["vector"]]
    recs[4]["vector"] = [x * (1 + 5e-5) for x in recs[4]["vector"]]  # within the tolerance: kept as given
    recs[7]["vector"] = [x * 1e-30 for x in recs[7]["vector"]]  # tiny: its float32 squares underflow
    scaled.append(7)
    path = write(tmp_path / "in", recs, fmt)
    with open_store(location) as s:  # type: ignore[attr-defined]
        rep = import_file(s, path, embedder=EMB)
        assert rep.normalised == len(scaled) and rep.to_json()["normalised"] == len(scaled)
        for i in (0, 1, 3, 4, 9, 12):
            q = np.asarray(recs[i]["vector"], dtype=np.float32)
            q /= np.linalg.norm(q)
            cid, score = s.search_dense(q, 1, Filters(unrestricted=True))[0]
            assert cid == f"c{i}" and abs(score - 1.0) < 2e-4, (i, cid, score)
        if location.endswith(".db"):
            stored = dict(s._conn.execute("SELECT id, vector FROM chunks").fetchall())
            for i, r in enumerate(recs):
                v = np.frombuffer(stored[f"c{i}"], dtype=np.float32)
                assert abs(float(np.linalg.norm(v)) - 1.0) < 2e-4
                if i not in scaled:
                    assert stored[f"c{i}"] == np.asarray(r["vector"], dtype=np.float32).tobytes()


def test_embedder_of_the_store_is_kept(tmp_path: Path) -> None:
    path = write(tmp_path / "in", rows(4), "jsonl")
    with open_store(str(tmp_path / "s.db")) as s:  # type: ignore[attr-defined]
        s.set_meta({"embedder": "all-MiniLM-L6-v2-onnx-int8", "dim": "384"})
        with pytest.raises(InputError, match=r"built with embedder 'all-MiniLM-L6-v2-onnx-int8' \(dim 384\).*'hash-bow' \(dim 16\)"):
            import_file(s, path, embedder=EMB)


def test_refuses_a_store_with_documents(location: str, tmp_path: Path) -> None:
    path = write(tmp_path / "in", rows(8), "jsonl")
    with open_store(location) as s:  # type: ignore[attr-defined]
        import_file(s, path, embedder=EMB)
        with pytest.raises(InputError, match="already holds documents"):
            import_file(s, path, embedder=EMB)
        assert s.count() == 8


@pytest.mark.postgres
@pytest.mark.parametrize("kind", ["UNLOGGED", "TEMP"])
def test_postgres_staging_leaves_no_table(request: Any, tmp_path: Path, kind: str,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The staging tables (unlogged, or temporary for a user who may not create tables in the
    schema) are gone after a load and after a refused one, and both kinds load the same rows."""
    import psycopg

    from docket.store import bulk_postgres

    url = str(request.getfixturevalue("pg_url"))
    monkeypatch.setattr(bulk_postgres, "_staging", lambda conn: kind)
    monkeypatch.setattr(importer, "BATCH_ROWS", 8)
    bad = rows()
    bad[30]["vector"] = bad[30]["vector"][:-1]
    with open_store(url) as s:  # type: ignore[attr-defined]
        with pytest.raises(InputError, match="row 31:"):
            import_file(s, write(tmp_path / "bad", bad, "jsonl"), embedder=EMB)
        import_file(s, write(tmp_path / "in", rows(), "jsonl"), embedder=EMB)
        assert s.count() == 40 and len(s.search_bm25("refund", 50, Filters(unrestricted=True))) > 0
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM pg_class WHERE relname LIKE 'docket_import%'").fetchone() == (0,)


def test_cli(tmp_path: Path) -> None:
    from cli_run import run

    path = write(tmp_path / "in", rows(8), "jsonl")
    db = str(tmp_path / "s.db")
    r = run("import", str(path), "--db", db, "--embedder", "hash", "--json")
    assert r.returncode == 2 and "row 1: has 16 values, but the store's embedder 'hash-bow' has dimension 256" in r.stderr
    assert list(tmp_path.glob("s.db*")) == []  # a refused file leaves no empty store behind
    r = run("import", str(tmp_path / "missing.jsonl"), "--db", db, "--embedder", "hash")
    assert r.returncode == 2 and "no such file" in r.stderr and list(tmp_path.glob("s.db*")) == []
    recs = rows(8)
    for rec in recs:
        rec["vector"] = (rec["vector"] * 16)[:256]
    path = write(tmp_path / "in256", recs, "jsonl")
    r = run("import", str(path), "--db", db, "--embedder", "hash", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["rows"] == 8
    r = run("import", str(path), "--db", db, "--embedder", "hash")
    assert r.returncode == 2 and "already holds documents" in r.stderr
    assert Path(db).exists()  # a store that was there before is never removed


# --- the batch checks and the batch writers give what the row-by-row path and `docket index` give ---

def _forced_slow(monkeypatch: pytest.MonkeyPatch) -> None:
    from docket.store import bulk_check

    def slow(*a: Any, **k: Any) -> Any:
        raise bulk_check.Slow

    monkeypatch.setattr(importer, "check_columns", slow)


def _checked(path: Path, fmt: str) -> tuple[list[Any], dict[Any, tuple[Any, ...]]]:
    from docket.tokens import default_counter

    checker = importer.Checker(str(path), DIM, "hash-bow", default_counter().count)
    got = [(b.first, b.cols, b.vectors.tolist(), b.tokens) for b in importer.batches(path, fmt, checker, 8)]
    return got, {k: (v.status, v.date, v.effective_to, v.title, v.first, v.n, v.content_hash())
                 for k, v in checker.versions.items()}


def _varied(n: int = 40) -> list[dict[str, Any]]:
    recs = rows(n)
    for i, r in enumerate(recs):
        if i % 5 == 0:
            r["text"] = f"Crème brûlée ΣΊΣΥΦΟΣ naïve café ﬁne Straße {r['text']}"
        if i % 6 == 0:
            r["section"], r["source_type"], r["trust"] = "§ 2", "pdf", "untrusted"
        if i % 7 == 0:
            r["status"] = " Current "
            r["acl"] = "group:finance"
        if i // 4 == 3:
            r["date"], r["effective_to"] = "2024-01-01", "2024-12-31"
        if i % 9 == 4:  # off unit length: both paths scale it
            r["vector"] = [x * 3 for x in r["vector"]]
        if i % 9 == 0:
            r["team"] = {"name": "ops", "n": i}  # outside the contract: into metadata
    for r in recs[:4]:  # the rows of one version agree (status, dates) whatever the spoilers above did
        r["status"] = "current"
    recs[0]["status"] = " Current "
    return recs


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_batch_checks_equal_the_row_checks(tmp_path: Path, fmt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    recs = _varied()
    if fmt == "parquet":
        for r in recs:
            r.pop("team", None)
            r["acl"] = [r["acl"]] if isinstance(r.get("acl"), str) else r.get("acl")
    path = write(tmp_path / "in", recs, fmt)
    fast = _checked(path, fmt)
    _forced_slow(monkeypatch)
    slow = _checked(path, fmt)
    assert fast == slow
    assert any(m for _, c, _, _ in fast[0] for m in c["metadata"]) == (fmt == "jsonl")


def test_chunk_gains_no_unmirrored_rule() -> None:
    """bulk_check mirrors Chunk's validators; a new one must be looked at there (MIRRORED)."""
    from docket.model import Chunk
    from docket.store.bulk_check import MIRRORED

    decorators = Chunk.__pydantic_decorators__
    names = {*decorators.field_validators, *decorators.model_validators}
    assert names <= MIRRORED, names - MIRRORED


def test_posting_blobs_equal_write_versions(tmp_path: Path) -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from docket.store.bulk_sqlite import _cut, _postings
    from docket.store.bulk_text import batch_terms, encode
    from docket.store.sqlite_schema import _TermIds
    from docket.store.terms import term_counts

    with open_store(str(tmp_path / "s.db")) as s:  # type: ignore[attr-defined]
        conn = s._conn

        @settings(max_examples=60, deadline=None)
        @given(st.lists(st.text(alphabet=st.sampled_from("ab cé Σ9_-é\u0301 refund refunds the a x"), max_size=60),
                        min_size=1, max_size=6))
        def check(texts: list[str]) -> None:
            def _pack(cur: Any, ids: Any, known: dict[str, int], terms: Any) -> tuple[list[bytes], list[int]]:
                arr, sizes, lengths = _postings(cur, ids, known, terms)  # as the load's _insert reads them
                return _cut(arr, sizes), lengths.tolist()

            cur = conn.cursor()
            want = _TermIds().pack(cur, texts)
            ids = _TermIds()
            known: dict[str, int] = {}
            got = _pack(cur, ids, known, encode([term_counts(t) for t in texts]))
            assert list(zip(*got, strict=True)) == want
            batch = _pack(cur, _TermIds(), {}, batch_terms(texts))  # what the import sends
            assert list(zip(*batch, strict=True)) == want

        check()


def test_worker_processes_give_the_same_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The token counts and terms worked out in worker processes (a big file) are the ones worked
    out in-process: the two stores hold the same rows byte for byte."""
    import sqlite3

    from docket.store import bulk_text

    path = write(tmp_path / "in", _varied(60), "jsonl")
    monkeypatch.setattr(importer, "BATCH_ROWS", 8)
    monkeypatch.setattr(bulk_text, "_single_threaded", lambda: True)  # pytest may run helper threads
    dumps = []
    for after in (10**9, 4):
        monkeypatch.setattr(bulk_text, "POOL_AFTER_ROWS", after)
        db = tmp_path / f"s{after}.db"
        with open_store(str(db)) as s:  # type: ignore[attr-defined]
            import_file(s, path, embedder=EMB)
        with sqlite3.connect(db) as conn:
            dumps.append(conn.execute("SELECT id, tokens, terms, len, vector, acl, metadata FROM chunks "
                                      "ORDER BY rowid").fetchall())
    assert dumps[0] == dumps[1] and len(dumps[0]) == 60


def test_no_worker_processes_are_forked_beside_another_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fork copies every lock as it is: with another thread alive (a server, a caller's pool) the
    text work stays in this process, whatever the file's size."""
    import threading

    from docket.store import bulk_text
    from docket.tokens import default_counter

    monkeypatch.setattr(bulk_text, "POOL_AFTER_ROWS", 0)
    work = bulk_text.TextWork(default_counter().count, default_counter=True)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        work.submit(["one text", "two texts"], None).result()
        assert work.pool is None
    finally:
        stop.set()
        other.join()
        work.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_import_answers_as_index_does(tmp_path: Path, backend: str, request: Any) -> None:
    """The chunks written by `docket index` (Session.index) and the same chunks with the same
    vectors given to `docket import` make stores that retrieve the same candidates, with the same
    scores, and (SQLite) in the same order, rendering byte-identical briefs."""
    import sqlite3

    from docket.api import Session
    from docket.embed import HashEmbedder

    emb = HashEmbedder(DIM)
    recs = [{k: v for k, v in r.items() if k not in ("vector", "tokens")} for r in _varied(40)]
    indexed = str(tmp_path / "indexed.db")
    with open_store(indexed) as s:  # type: ignore[attr-defined]
        Session(s, embedder=emb).index(records=recs)
    with sqlite3.connect(indexed) as conn:
        vectors = {i: np.frombuffer(v, dtype=np.float32).tolist() for i, v in conn.execute("SELECT id, vector FROM chunks")}
    path = write(tmp_path / "in", [{**r, "vector": vectors[r["id"]]} for r in recs], "jsonl")
    if backend == "postgres":
        request.applymarker(pytest.mark.postgres)
        imported = str(request.getfixturevalue("pg_url"))
    else:
        imported = str(tmp_path / "imported.db")
    with open_store(imported) as s:  # type: ignore[attr-defined]
        import_file(s, path, embedder=(emb.name, DIM))
    if backend == "postgres":  # the reference is the same backend written by index
        with open_store(imported) as s:  # type: ignore[attr-defined]
            got = _answers(s, emb)
        _same_as_postgres_index(request, recs, emb, got)
        return _filled_answers_alike(imported, emb, got)
    with open_store(indexed) as a, open_store(imported) as b:  # type: ignore[attr-defined]
        want = _answers(a, emb)
        assert want == _answers(b, emb)
    _filled_answers_alike(imported, emb, want, indexed)


def _filled_answers_alike(imported: str, emb: Any, want: list[Any], indexed: str | None = None) -> None:
    """After docket.store.fill_records the briefs built from the records (a fresh process's view:
    nothing in memory, every feature read from its record) are `want`, the briefs the store gave
    before. With `indexed` (SQLite), the imported store also holds the records `docket index`
    wrote there (this store's writer, record_of), byte for byte."""
    from docket.features import default_cache, record_of
    from docket.store.fill_records import fill_records

    with open_store(imported) as b:  # type: ignore[attr-defined]
        assert fill_records(b, record_of, workers=0).written == 40
    if indexed is not None:
        import sqlite3

        q = "SELECT c.id, f.features FROM chunks c JOIN chunk_features f ON f.chunk = c.rowid ORDER BY c.id"
        with sqlite3.connect(indexed) as x, sqlite3.connect(imported) as y:
            assert x.execute(q).fetchall() == y.execute(q).fetchall()
    cache = default_cache()
    cache.clear()
    cache.computed = cache.loaded = 0
    with open_store(imported) as b:  # type: ignore[attr-defined]
        assert _answers(b, emb) == want
    assert cache.loaded >= 40 and cache.computed == 0


def _answers(store: Any, emb: Any) -> list[Any]:
    from docket.api import Session

    out = []
    for principal, groups in ((None, ()), ("ann", ("finance",)), ("bob", ("hr",))):
        for q in ("refund window for annual plans", "salary bands finance policy", "crème brûlée café", "item7"):
            res = Session(store, embedder=emb).ask(q, principal=principal, groups=groups, floor=-1.0, budget=400)
            out.append(([(c.chunk.id, round(c.score, 6)) for c in res.candidates],
                        json.dumps(res.to_json(), sort_keys=True, default=str)))
    return out


def _same_as_postgres_index(request: Any, recs: list[dict[str, Any]], emb: Any, got: list[Any]) -> None:
    import psycopg

    from docket.api import Session

    server = str(request.getfixturevalue("pg_server"))
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA docket_test_indexed_ref")
    sep = "&" if "?" in server else "?"
    with open_store(f"{server}{sep}options=-csearch_path%3Ddocket_test_indexed_ref%2Cpublic") as s:  # type: ignore[attr-defined]
        Session(s, embedder=emb).index(records=recs)
        want = _answers(s, emb)
    # the same candidates with the same scores; PostgreSQL orders candidates of equal score as
    # its plans meet them (HNSW built once vs row by row, postings in another physical order), so
    # the order among ties, and with it the brief, can differ between two equal stores there
    assert [sorted(w[0]) for w in want] == [sorted(g[0]) for g in got]


def _pragmas(conn: Any) -> tuple[Any, ...]:
    return tuple(conn.execute(f"PRAGMA {p}").fetchone()[0] for p in ("journal_mode", "synchronous", "cache_size"))


@pytest.mark.parametrize("refused", [False, True])
def test_sqlite_load_settings_are_set_back(tmp_path: Path, refused: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The load runs with a rollback journal, synchronous=FULL and a big page cache
    (bulk_sqlite._load_settings); after it, committed or refused, the store is back in WAL with its
    own settings, and a refused file left nothing."""
    from docket.store import bulk_sqlite

    recs = rows()
    if refused:
        recs[30]["acl"] = ["user:"]
    monkeypatch.setattr(importer, "BATCH_ROWS", 8)
    path = write(tmp_path / "in", recs, "jsonl")
    during: list[tuple[Any, ...]] = []
    insert = bulk_sqlite._insert

    def noted(cur: Any, *args: Any) -> int:
        during.append(_pragmas(cur))
        return insert(cur, *args)

    monkeypatch.setattr(bulk_sqlite, "_insert", noted)
    loc = str(tmp_path / "s.db")
    with open_store(loc) as s:  # type: ignore[attr-defined]
        before = _pragmas(s._conn)
        assert before[0] == "wal"
        if refused:
            with pytest.raises(InputError, match="row 31:"):
                import_file(s, path, embedder=EMB)
        else:
            assert import_file(s, path, embedder=EMB).rows == 40
        assert _pragmas(s._conn) == before
        assert during and set(during) == {("delete", 2, -bulk_sqlite._LOAD_CACHE_KIB)}
    assert not (tmp_path / "s.db-journal").exists()
    if refused:
        _empty(loc)
    else:
        with open_store(loc, read_only=True) as s:  # type: ignore[attr-defined]
            assert s.count() == 40 and s.search_bm25("item5 refund", 5, Filters(unrestricted=True))


def test_sqlite_load_stays_in_wal_beside_another_connection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Leaving WAL needs the file to itself: with another connection open on it the load runs in
    WAL (as before), and the other connection reads the store meanwhile and after."""
    import sqlite3

    from docket.store import bulk_sqlite

    path = write(tmp_path / "in", rows(), "jsonl")
    loc = str(tmp_path / "s.db")
    modes: list[str] = []
    insert = bulk_sqlite._insert

    def noted(cur: Any, *args: Any) -> int:
        modes.append(cur.execute("PRAGMA journal_mode").fetchone()[0])
        assert other.execute("SELECT count(*) FROM chunks").fetchone()[0] == 0  # WAL: a reader sees the old store
        return insert(cur, *args)

    monkeypatch.setattr(bulk_sqlite, "_insert", noted)
    with open_store(loc) as s:  # type: ignore[attr-defined]
        other = sqlite3.connect(loc)
        other.execute("SELECT count(*) FROM chunks").fetchone()
        try:
            assert import_file(s, path, embedder=EMB).rows == 40
            assert other.execute("SELECT count(*) FROM chunks").fetchone()[0] == 40
        finally:
            other.close()
        assert modes and set(modes) == {"wal"}
        assert _pragmas(s._conn)[0] == "wal"


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_sqlite_ann_index_built_beside_the_load_is_the_one_a_search_builds(tmp_path: Path, fmt: str,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The IVF index an import builds in a thread from its own vectors (sqlite_ann.LoadBuild:
    training from the last checked batch where the file gives its row count, Parquet; from the
    end of the load otherwise) is, byte for byte, the index the first search would build from the
    rows read back; and the first search takes it instead of training again."""
    import faiss

    from docket.store.sqlite import SQLiteStore
    from docket.store.sqlite_ann import AnnIndex, AnnSettings, LoadBuild

    monkeypatch.setattr(importer, "BATCH_ROWS", 64)  # many parts; the 512-row sample spans them
    built: list[int] = []
    real = AnnIndex.build.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(AnnIndex, "build", classmethod(lambda cls, *a, **k: built.append(1) or real(cls, *a, **k)))
    early: list[int] = []
    before = SQLiteStore.ann_before_load
    monkeypatch.setattr(SQLiteStore, "ann_before_load", lambda self, v: early.append(len(v)) or before(self, v))
    ahead: list[LoadBuild] = []
    start = LoadBuild.ahead.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(LoadBuild, "ahead", classmethod(lambda cls, *a, **k: ahead.append(start(cls, *a, **k))
                                                       or ahead[-1]))
    recs = rows(600)
    for r in recs[::7]:  # off unit length: the rows read ahead are scaled as the check scales them
        r["vector"] = [2.5 * x for x in r["vector"]]
    path = write(tmp_path / "in", recs, fmt)
    with open_store(str(tmp_path / "s.db")) as s:  # type: ignore[attr-defined]
        s.ann = AnnSettings(min_rows=0, exact_below=0, nlist=8, nprobe=8, cheaper_exact=False)
        import_file(s, path, embedder=EMB)
        assert s._ann is not None and s._ann_load is None and not built
        assert early == ([10] if fmt == "parquet" else [])  # 600 rows: 10 batches, the last one checked
        # Parquet: trained from the first batch on, from the sample rows read from the file itself
        assert [b.early for b in ahead] == ([True] if fmt == "parquet" else [])
        m = s._search_index()
        again = real(AnnIndex, m.mat, m.rowids, m.seq, 8)
        assert bytes(faiss.serialize_index(s._ann.index)) == bytes(faiss.serialize_index(again.index))
        assert s._ann.seq == m.seq and s._ann.trained_rows == 600


@pytest.mark.parametrize("read", ["other rows", "unreadable", "fails", "wrong shape"])
def test_sqlite_ann_build_ahead_retrains_unless_it_read_the_checked_rows(read: str) -> None:
    """A build started ahead (`LoadBuild.ahead`) trains on the rows `read` gives; when those are
    not, byte for byte, the sample of the checked rows (or there are none), it trains again from
    the checked rows: the index is `AnnIndex.build`'s either way."""
    import faiss

    from docket.store.sqlite_ann import AnnIndex, LoadBuild, training_rows

    rng = np.random.default_rng(5)
    mat = rng.normal(size=(2000, DIM)).astype(np.float32)
    mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    rowids = np.arange(1, 2001, dtype=np.int64)
    want = bytes(faiss.serialize_index(AnnIndex.build(mat, rowids, 3, 16).index))

    def reader(picks: Any) -> Any:
        got = mat[picks].copy()
        if read == "other rows":
            got[len(got) // 2, 0] += 1e-6
        if read == "fails":
            raise OSError("gone")
        return None if read == "unreadable" else got[:, :-1] if read == "wrong shape" else got

    for r in (reader, lambda picks: mat[picks].copy()):
        b = LoadBuild.ahead(2000, r, 16)
        assert b.checked([mat[:700], mat[700:1500], mat[1500:]])
        got = b.rows_at(1, 3).take(mat, rowids, 3)
        assert got is not None and bytes(faiss.serialize_index(got.index)) == want
        assert b.early == (r is not reader)
    assert training_rows(2000, 16).shape == (1024,)  # a sample, not every row
    unchecked = LoadBuild.ahead(2000, reader, 16)  # a refused file: never checked, dropped
    unchecked.drop()
    assert not unchecked._thread.is_alive() and unchecked.take(mat, rowids, 3) is None
    other = LoadBuild.ahead(2000, reader, 16)
    assert not other.checked([mat[:10]])  # not the rows it was started for
    other.drop()
    assert not other._thread.is_alive()


def test_parquet_rows_are_the_checked_vectors(tmp_path: Path) -> None:
    """`parquet_rows` (what a build ahead trains on) gives the picked rows as the load checks them:
    float64 lists cast, a row off unit length scaled; None where a picked row would be refused."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    recs = rows(300)
    vecs = [[3.0 * x for x in r["vector"]] if i % 5 == 0 else r["vector"] for i, r in enumerate(recs)]
    path = tmp_path / "v.parquet"
    pq.write_table(pa.table({"id": [r["id"] for r in recs], "doc": [r["doc"] for r in recs],
                             "text": [r["text"] for r in recs],
                             "vector": pa.array(vecs, type=pa.list_(pa.float64()))}), path)
    checker = importer.Checker(str(path), DIM, "x", len)
    checked = np.concatenate([checker.batch(r).vectors for r in importer._parquet(path, checker, 64)])
    picks = np.array([0, 5, 63, 64, 65, 200, 299])
    assert np.array_equal(importer.parquet_rows(path, DIM, picks), checked[picks])
    assert np.array_equal(importer.parquet_rows(path, DIM, slice(None)), checked)
    vecs[200] = [0.0] * DIM
    pq.write_table(pa.table({"id": [r["id"] for r in recs], "doc": [r["doc"] for r in recs],
                             "text": [r["text"] for r in recs], "vector": vecs}), path)
    assert importer.parquet_rows(path, DIM, picks) is None and importer.parquet_rows(path, DIM, picks[:5]) is not None


def test_refused_parquet_leaves_no_thread_and_no_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file refused at a late row while its batches are read ahead, its text worked out in worker
    processes and its ANN index trained ahead: one line naming the row, no store left, and no
    thread or worker process of the import still alive."""
    import multiprocessing
    import threading

    from docket.cli.import_cmd import _new_sqlite_files
    from docket.store import bulk_text
    from docket.store.sqlite_ann import AnnSettings

    monkeypatch.setattr(importer, "BATCH_ROWS", 32)
    monkeypatch.setattr(bulk_text, "POOL_AFTER_ROWS", 32)
    recs = rows(400)
    recs[390]["vector"] = [0.0] * DIM
    path = write(tmp_path / "in", recs, "parquet")
    db = str(tmp_path / "s.db")
    made = _new_sqlite_files(db)
    before = set(threading.enumerate())
    started: list[str] = []
    real = threading.Thread.start
    monkeypatch.setattr(threading.Thread, "start", lambda self: started.append(self.name) or real(self))
    with pytest.raises(InputError, match=r"row 391: .*all zeros"):
        try:
            with open_store(db) as s:  # type: ignore[attr-defined]
                s.ann = AnnSettings(min_rows=0, exact_below=0, nlist=4, nprobe=4)
                import_file(s, path, embedder=EMB, count=bulk_text.DefaultCount())
        finally:
            made()
    assert {"docket-ann-load", "docket-import-read"} <= set(started)
    assert set(threading.enumerate()) <= before
    assert not multiprocessing.active_children()
    assert not Path(db).exists()


def test_read_ahead_stops_its_thread_however_the_caller_leaves() -> None:
    import threading

    def items(n: int, fail_at: int = -1) -> Any:
        for i in range(n):
            if i == fail_at:
                raise ValueError("broken page")
            yield i

    assert list(importer._read_ahead(items(50))) == list(range(50))
    assert list(importer._read_ahead(items(0))) == [] and list(importer._read_ahead(items(1))) == [0]
    with pytest.raises(ValueError, match="broken page"):
        list(importer._read_ahead(items(50, fail_at=30)))
    it = importer._read_ahead(items(10_000))
    assert [next(it) for _ in range(5)] == [0, 1, 2, 3, 4]
    it.close()  # a refused row: the caller stops reading
    assert not [t for t in threading.enumerate() if t.name == "docket-import-read"]


@pytest.mark.parametrize("texts", [
    ["plain text", "it's here", 'say "hi"', "both ' and \"", "", "x"],  # plain ASCII: made without repr
    ["a\nnew line", "plain"], ["back\\slash", "tab\there"], ["del \x7f", "bell \x07"],
    ["naïve café", "it's"], ["zero\u200bwidth", "plain"], ["emoji 🎉 and 'quotes'", "plain"],
], ids=["ascii", "newline", "escapes", "control", "accents", "unprintable", "astral"])
def test_row_reprs_are_the_rows_tuple_reprs(texts: list[str]) -> None:
    """The version digest's text of each row (`importer._row_reprs`) is `repr` of the row's tuple,
    whatever the texts hold (quotes, escapes, non-ASCII; plain ASCII rows take the path without
    `repr`); and a row with metadata sorts it."""
    n = len(texts)
    cols: dict[str, list[Any]] = {
        "id": [f"c{i}'" if i == 1 else f"c{i}" for i in range(n)], "text": texts, "title": ["T", "it's"] * n,
        "section": [""] * n, "position": list(range(n)), "date": [date(2024, 5, 1), None] * n,
        "effective_to": [None] * n, "source_type": ["policy", None] * n, "trust": ["trusted"] * n,
        "acl": [("group:finance",), None] * n, "metadata": [{}] * n}
    for name in ("title", "date", "source_type", "acl"):
        cols[name] = cols[name][:n]
    for metas in ([{}] * n, [{"team": "ops", "a": 1} if i % 2 else {} for i in range(n)]):
        cols["metadata"] = metas
        want = [repr((cols["id"][i], texts[i], cols["title"][i], cols["section"][i], cols["position"][i],
                      cols["date"][i], cols["effective_to"][i], cols["source_type"][i], cols["trust"][i],
                      cols["acl"][i], sorted(metas[i].items()))) for i in range(n)]
        assert importer._row_reprs(cols) == want


def test_default_count_is_the_default_counter_loaded_where_it_counts() -> None:
    from docket.store.bulk_text import DefaultCount, is_default
    from docket.tokens import default_counter

    count = DefaultCount()
    assert is_default(count) and is_default(default_counter().count) and not is_default(len)
    texts = ["Annual plans can be refunded within 30 days.", "", "naïve café – ½ off"]
    assert [count(t) for t in texts] == [default_counter().count(t) for t in texts]


def _store_state(loc: str) -> dict[str, Any]:
    """Every table of a SQLite store (but for its random store id, write tokens and `indexed_at`),
    its ANN file (index bytes, stamp but for the store id and token) and its search-index
    snapshot (arrays, strings, fields but for the store id and token)."""
    import sqlite3

    import faiss

    from docket.store import snapshot
    from docket.store.sqlite_ann import read as read_ann

    conn = sqlite3.connect(loc)
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    out: dict[str, Any] = {"schema": conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master "
                                                  "ORDER BY type, name").fetchall()}
    for t in tables:
        if t == "write_tokens":
            out[t] = conn.execute("SELECT generation FROM write_tokens ORDER BY 1").fetchall()
            continue
        rows_ = conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall()
        if t == "meta":
            rows_ = [r for r in rows_ if r[0] != "store_id"]
        if t == "versions":
            rows_ = [r[:-1] for r in rows_]  # indexed_at: the time of the import
        out[t] = rows_
    conn.close()
    got = read_ann(Path(loc + ".ann"))
    assert got is not None
    out["ann"] = (bytes(faiss.serialize_index(got[0].index)), {k: v for k, v in got[1].items()
                                                                if k not in ("store_id", "token")})
    snap = snapshot.read(Path(loc + ".index"))
    assert snap is not None
    fields, arrays, strings = snap
    out["snapshot"] = ({k: v for k, v in fields.items() if k not in ("store_id", "token")},
                       {k: (a.dtype.str, a.shape, a.tobytes()) for k, a in arrays.items()}, strings)
    return out


def test_sqlite_import_stores_what_it_did_before_reading_and_training_ahead(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Session 37's paths (Parquet batches decoded in a thread ahead of the check, the IVF index
    trained from sample rows read ahead at nice 19, the token counter loaded in the workers) store
    exactly what the load stored without them: every table, the ANN file and the search-index
    snapshot (but for the store id, write tokens and timestamps)."""
    from docket.store import bulk_text
    from docket.store.sqlite import SQLiteStore
    from docket.store.sqlite_ann import AnnSettings
    from docket.tokens import default_counter

    monkeypatch.setenv("DOCKET_INDEX_SNAPSHOT", "on")
    monkeypatch.setattr(importer, "BATCH_ROWS", 64)
    monkeypatch.setattr(bulk_text, "POOL_AFTER_ROWS", 64)
    recs = _varied(700)
    for r in recs:
        r.pop("team", None)
        r["acl"] = [r["acl"]] if isinstance(r.get("acl"), str) else r.get("acl")
    for r in recs[::9]:
        r["vector"] = [1.5 * x for x in r["vector"]]
    path = write(tmp_path / "in", recs, "parquet")
    from docket.store.sqlite_ann import LoadBuild

    started = LoadBuild.ahead.__func__  # type: ignore[attr-defined]
    builds: list[LoadBuild] = []
    monkeypatch.setattr(LoadBuild, "ahead", classmethod(lambda cls, *a, **k: builds.append(started(cls, *a, **k))
                                                        or builds[-1]))
    states = []
    for ahead in (True, False):
        loc = str(tmp_path / f"s-{ahead}.db")
        with monkeypatch.context() as m:
            if not ahead:
                m.setattr(importer, "_read_ahead", lambda items: items)
                m.setattr(SQLiteStore, "ann_ahead", lambda self, rows, read: None)
            with open_store(loc) as s:  # type: ignore[attr-defined]
                s.ann = AnnSettings(min_rows=0, exact_below=0, nlist=8, nprobe=8, cheaper_exact=False)
                count = bulk_text.DefaultCount() if ahead else default_counter().count
                assert import_file(s, path, embedder=EMB, count=count).rows == 700
        states.append(_store_state(loc))
    assert states[0].keys() == states[1].keys()
    for name in states[0]:
        assert states[0][name] == states[1][name], name
    assert len(states[0]["chunks"]) == 700 and states[0]["chunk_log"] and states[0]["chunk_acl"]
    assert [b.early for b in builds] == [True]  # the first import trained ahead, on the rows it read


def test_sqlite_ann_load_build_is_taken_only_for_the_rows_it_was_built_from() -> None:
    from docket.store.sqlite_ann import LoadBuild

    rng = np.random.default_rng(3)
    mat = rng.normal(size=(300, DIM)).astype(np.float32)
    rowids = np.arange(5, 305, dtype=np.int64)

    def taken(read: np.ndarray = mat, rowids: np.ndarray = rowids, seq: int = 9) -> bool:
        """Whether the build from the load's `mat` is taken for the rows a store read back."""
        return LoadBuild([mat[:100], mat[100:]], nlist=4).rows_at(5, 9).take(read, rowids, seq) is not None

    changed = mat.copy()
    changed[250, 3] += 1e-6
    gap = rowids.copy()
    gap[-1] += 1
    assert taken()
    assert not taken(seq=10)  # another write since the load
    assert not taken(read=changed)  # another vector than the load wrote
    assert not taken(rowids=gap) and not taken(mat[:299], rowids[:299])
    dropped = LoadBuild([mat], nlist=4).rows_at(5, 9)
    dropped.drop()
    assert dropped.take(mat, rowids, 9) is None  # once only
    unplaced = LoadBuild([mat], nlist=4)  # trained, the rows never written (a failed load)
    assert unplaced.take(mat, rowids, 9) is None and not unplaced._thread.is_alive()
    assert not LoadBuild([mat], nlist=4).started_for([mat.copy()])


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_sqlite_search_index_takes_the_loaded_rows_as_read_back(tmp_path: Path, fmt: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The first search after an import builds its index from the rows the load kept
    (`after_load`), not by reading every row back; that index is, array for array, the one the
    rows read back give (dates, ACLs, sources, statuses, postings across batches)."""
    from docket.store import sqlite_search
    from docket.store.sqlite_index import _Index, _Rows

    recs = _varied(90)
    for r in recs[::5]:  # off unit length: the rows kept must be the scaled vectors the store holds
        r["vector"] = [3 * x for x in r["vector"]]
    if fmt == "parquet":
        for r in recs:
            r.pop("team", None)
            r["acl"] = [r["acl"]] if isinstance(r.get("acl"), str) else r.get("acl")
    path = write(tmp_path / "in", recs, fmt)
    monkeypatch.setattr(importer, "BATCH_ROWS", 16)
    full_reads: list[int] = []
    real = sqlite_search._Search._index_rows
    monkeypatch.setattr(sqlite_search._Search, "_index_rows",
                        lambda self, where="", args=(): full_reads.append(1) or real(self, where, args))
    with open_store(str(tmp_path / "s.db")) as s:  # type: ignore[attr-defined]
        import_file(s, path, embedder=EMB)
        assert s._load_rows is None and not full_reads
        m = s._search_index()
        acl = [(r[0], r[1]) for r in s._conn.execute("SELECT principal, chunk FROM chunk_acl")]
        read = _Index.load(_Rows.of(real(s), DIM), acl, m.generation, m.seq)
    got, want = m.snapshot_parts(), read.snapshot_parts()
    assert got[0] == want[0] and got[2] == want[2] and got[1].keys() == want[1].keys()
    for name, a in got[1].items():
        assert a.dtype == want[1][name].dtype and np.array_equal(a, want[1][name]), name
    assert m.acl.keys() == read.acl.keys() and len(m.ids) == 90 and not m.public.all() and m.dates.any()


def test_sqlite_loaded_rows_are_not_taken_after_another_write(tmp_path: Path) -> None:
    """A write between the load and the first search (another log position): the rows are read back."""
    from docket.store.sqlite_index import _Rows

    with open_store(str(tmp_path / "s.db")) as s:  # type: ignore[attr-defined]
        import_file(s, write(tmp_path / "in", rows(40), "jsonl"), embedder=EMB)
        s._index = None
        with s._transaction() as cur:
            s.after_load(cur, [])  # nothing kept for no rows
            assert s._load_rows is None
            s.after_load(cur, [_Rows.of(s._index_rows(), DIM)])
        seq, parts, first = s._load_rows
        parts[0].ids[0] = "not what the store holds"
        s._conn.execute("UPDATE chunks SET text = text WHERE rowid = ?", (first,))  # logged: a later position
        m = s._search_index()
        assert m.ids[0] == "c0" and m.seq > seq and s._load_rows is None


def test_sqlite_ann_load_build_gives_the_same_index_with_any_thread_count() -> None:
    """One faiss thread for the training (small loads) or all of them (large ones): the index
    `AnnIndex.build` makes, byte for byte."""
    import faiss

    from docket.store.sqlite_ann import AnnIndex, LoadBuild

    rng = np.random.default_rng(4)
    mat = rng.normal(size=(2000, DIM)).astype(np.float32)
    mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    rowids = np.arange(1, 2001, dtype=np.int64)
    want = bytes(faiss.serialize_index(AnnIndex.build(mat, rowids, 3, 16).index))
    for threads in (1, 0):
        got = LoadBuild([mat[:700], mat[700:1500], mat[1500:]], 16, threads).rows_at(1, 3).take(mat, rowids, 3)
        assert got is not None and bytes(faiss.serialize_index(got.index)) == want, threads
