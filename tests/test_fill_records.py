"""Filling the feature records `docket import` leaves out (docket.store.fill_records, `docket
import --features`, `docket features`): the records are byte for byte those `docket index` writes,
in-process or in worker processes; a rerun writes nothing; a chunk changed while the fill runs gets
no stale record; bad input fails in one line."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from conftest_pg import pg_server, pg_url  # noqa: F401
from test_import import DIM, _varied, write

from docket.brief.sizer import feature_record
from docket.errors import DocketError, InputError
from docket.store.bulk import import_file
from docket.store.factory import open_store
from docket.store.fill_records import fill_records


def _records(db: Path) -> dict[str, str]:
    with sqlite3.connect(db) as conn:
        return dict(conn.execute("SELECT c.id, f.features FROM chunks c JOIN chunk_features f ON f.chunk = c.rowid"))


def _indexed_and_file(tmp_path: Path, n: int = 40) -> tuple[Path, Path]:
    """A store written by `docket index`'s wiring (Session.open: the brief's record writer) and a
    JSONL file of the same chunks with the vectors it stored."""
    from docket.api import Session
    from docket.embed import HashEmbedder

    recs = [{k: v for k, v in r.items() if k not in ("vector", "tokens")} for r in _varied(n)]
    indexed = tmp_path / "indexed.db"
    with Session.open(indexed, create=True, embedder=HashEmbedder(DIM)) as s:
        s.index(records=recs)
    with sqlite3.connect(indexed) as conn:
        vectors = {i: list(memoryview(v).cast("f")) for i, v in conn.execute("SELECT id, vector FROM chunks")}
    return indexed, write(tmp_path / "in", [{**r, "vector": vectors[r["id"]]} for r in recs], "jsonl")


def _imported(tmp_path: Path, path: Path, name: str) -> Path:
    db = tmp_path / name
    with open_store(str(db)) as s:  # type: ignore[attr-defined]
        import_file(s, path, embedder=("hash-bow", DIM))
    return db


@pytest.mark.parametrize("workers", [0, 2])
def test_filled_records_are_those_index_writes(tmp_path: Path, workers: int, monkeypatch: pytest.MonkeyPatch) -> None:
    from docket.store import bulk_text

    monkeypatch.setattr(bulk_text, "_single_threaded", lambda: True)  # pytest may run helper threads
    indexed, path = _indexed_and_file(tmp_path)
    want = _records(indexed)
    assert len(want) == 40 and all('"costs":[[' in r for r in want.values())  # the rendered counts are in
    db = _imported(tmp_path, path, "imported.db")
    assert _records(db) == {}
    seen: list[tuple[int, int]] = []
    with open_store(str(db)) as s:  # type: ignore[attr-defined]
        generation = s.generation()
        report = fill_records(s, feature_record, batch=7, workers=workers, progress=lambda d, t: seen.append((d, t)))
        assert s.generation() == generation  # no chunk row changed: readers' indexes and snapshot files stay valid
    assert (report.written, report.changed, report.missing, report.workers) == (40, 0, 40, workers)
    assert seen[-1] == (40, 40) and len(seen) == 6  # one call per batch of 7
    assert _records(db) == want
    with open_store(str(db)) as s:  # type: ignore[attr-defined]
        again = fill_records(s, feature_record, workers=workers)
    assert (again.written, again.missing) == (0, 0)  # resumable: a rerun finds nothing to do
    assert _records(db) == want


def test_a_fill_keeps_existing_records_and_fills_the_rest(tmp_path: Path) -> None:
    """Only chunks without a record are written; one already there (`docket index`'s) is kept."""
    indexed, path = _indexed_and_file(tmp_path, 12)
    db = _imported(tmp_path, path, "imported.db")
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO chunk_features SELECT rowid, 'kept' FROM chunks WHERE id = 'c3'")
    with open_store(str(db)) as s:  # type: ignore[attr-defined]
        report = fill_records(s, feature_record, workers=0)
    assert (report.written, report.missing) == (11, 11)
    got = _records(db)
    assert got.pop("c3") == "kept" and got == {k: v for k, v in _records(indexed).items() if k != "c3"}


def test_a_chunk_changed_during_the_fill_gets_no_stale_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each batch is read again in its write transaction: a row rewritten after its record was
    computed keeps none (the next run computes it from what the row holds now)."""
    import docket.store.fill_records as fr

    _, path = _indexed_and_file(tmp_path, 12)
    db = _imported(tmp_path, path, "imported.db")
    real = fr._compute

    def compute_then_edit(records: Any, rows: Any) -> list[str]:
        out = real(records, rows)
        if any(r["id"] == "c2" for r in rows):
            with sqlite3.connect(db) as conn:  # another writer, between computing and writing
                conn.execute("UPDATE chunks SET text = 'rewritten' WHERE id = 'c2'")
        return out

    with open_store(str(db)) as s:  # type: ignore[attr-defined]
        monkeypatch.setattr(fr, "_compute", compute_then_edit)
        report = fill_records(s, feature_record, workers=0)
        monkeypatch.setattr(fr, "_compute", real)
        assert (report.written, report.changed) == (11, 1)
        assert "c2" not in _records(db)
        assert fill_records(s, feature_record, workers=0).written == 1
    from docket.features import content_key, digest

    with open_store(str(db)) as s:  # type: ignore[attr-defined]
        c2 = s.get("c2")
    assert c2 is not None and c2.text == "rewritten" and json.loads(_records(db)["c2"])["key"] == digest(content_key(c2))


def test_cli_import_features_and_features(tmp_path: Path) -> None:
    from cli_run import run

    indexed, path = _indexed_and_file(tmp_path, 16)
    recs = [json.loads(line) for line in path.read_text().splitlines()]
    for r in recs:  # the CLI's hash embedder has 256 dimensions
        r["vector"] = (r["vector"] * 16)[:256]
    path256 = write(tmp_path / "in256", recs, "jsonl")
    db = tmp_path / "cli.db"
    r = run("import", str(path256), "--db", str(db), "--embedder", "hash", "--features", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["rows"] == 16 and out["features"]["written"] == 16 and out["features"]["missing"] == 16
    assert set(_records(db)) == set(_records(indexed))
    r = run("features", "--db", str(db))
    assert r.returncode == 0 and "wrote 0 feature records" in r.stdout, r.stderr
    db2 = tmp_path / "cli2.db"
    r = run("import", str(path256), "--db", str(db2), "--embedder", "hash", "--features")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("imported 16 chunks") and "wrote 16 feature records" in r.stdout
    assert "no feature records were written" not in r.stdout
    db3 = tmp_path / "cli3.db"  # without --features the import says what the store lacks and how to fill it
    r = run("import", str(path256), "--db", str(db3), "--embedder", "hash")
    assert r.returncode == 0, r.stderr
    assert "no feature records were written" in r.stdout and f"docket features --db {db3}" in r.stdout
    assert not _records(db3)
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM chunk_features WHERE chunk % 2 = 0")
    r = run("features", "--db", str(db), "--workers", "0", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["written"] == 8, r.stderr


def test_cli_bad_input_is_one_line(tmp_path: Path) -> None:
    from cli_run import run

    r = run("features", "--db", str(tmp_path / "none.db"))
    assert r.returncode == 2 and r.stderr.strip().endswith("no such store (build one with `docket index` or "
                                                           "`docket import`)"), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "none.db").exists()
    r = run("features", "--db", str(tmp_path), "--json")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = run("features", "--db", str(tmp_path / "x.db"), "--workers", "-1")
    assert r.returncode == 2 and "--workers" in r.stderr


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes a read-only file")
def test_a_read_only_store_is_refused_in_one_line(tmp_path: Path) -> None:
    from cli_run import run

    _, path = _indexed_and_file(tmp_path, 8)
    db = _imported(tmp_path, path, "imported.db")
    for f in tmp_path.glob("imported.db*"):
        f.chmod(0o444)
    try:
        r = run("features", "--db", str(db))
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "cannot be written" in r.stderr
    finally:
        for f in tmp_path.glob("imported.db*"):
            f.chmod(0o644)


def test_a_store_opened_read_only_or_not_writable_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before any record is computed: a store opened for reading, a file this user may not write
    (simulated: root writes any file)."""
    import docket.store.fill_records as fr

    _, path = _indexed_and_file(tmp_path, 8)
    db = _imported(tmp_path, path, "imported.db")
    with open_store(str(db), read_only=True) as s, pytest.raises(DocketError, match="reading only"):  # type: ignore[attr-defined]
        fill_records(s, feature_record)
    monkeypatch.setattr(fr.os, "access", lambda *_: False)
    with open_store(str(db)) as s, pytest.raises(InputError, match="cannot be written"):  # type: ignore[attr-defined]
        fill_records(s, feature_record)
    from cli_run import run

    r = run("features", "--db", str(db))  # the CLI says so before opening the file
    assert r.returncode == 2 and r.stderr.strip().endswith("cannot be written (a read-only file): feature records are "
                                                           "written into the store; run this as a user who may write it")
    assert len(r.stderr.strip().splitlines()) == 1
    assert _records(db) == {}


@pytest.mark.postgres
def test_postgres_fill_equals_index(tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    from docket.store import bulk_text

    monkeypatch.setattr(bulk_text, "_single_threaded", lambda: True)  # pytest may run helper threads
    indexed, path = _indexed_and_file(tmp_path, 24)
    with open_store(pg_url) as s:  # type: ignore[attr-defined]
        import_file(s, path, embedder=("hash-bow", DIM))
        report = fill_records(s, feature_record, batch=5, workers=2)  # the forks never touch the connection
        assert (report.written, report.missing) == (24, 24)
        assert fill_records(s, feature_record).missing == 0
        rows = s._conn.execute("SELECT c.id, f.features FROM chunks c JOIN chunk_features f ON f.chunk = c.rowid")
        got = {r["id"]: r["features"] for r in rows}
    assert got == _records(indexed)


def test_a_reader_in_a_snapshot_sees_no_half_fill(tmp_path: Path) -> None:
    """A reader's snapshot (one read transaction) is not disturbed by the fill's writes, and sees the
    records once it reads again; its warm search index is kept (no chunk changed)."""
    from docket.features import FeatureCache

    _, path = _indexed_and_file(tmp_path, 12)
    db = _imported(tmp_path, path, "imported.db")
    cache = FeatureCache()
    with open_store(str(db), read_only=True, features=cache) as reader:  # type: ignore[attr-defined]
        index = reader._search_index()
        with reader.snapshot():
            before = reader.get_many(["c1", "c2"])
            with open_store(str(db)) as writer:  # type: ignore[attr-defined]
                assert fill_records(writer, feature_record, batch=5, workers=0).written == 12
            assert reader._conn.execute("SELECT count(*) FROM chunk_features").fetchone()[0] == 0
        assert reader._conn.execute("SELECT count(*) FROM chunk_features").fetchone()[0] == 12
        assert reader._search_index() is index
        after = reader.get_many(["c1", "c2"])
        assert after == before
        assert all(cache._offered.get(id(c))[1] for c in after.values())  # the records are offered now
