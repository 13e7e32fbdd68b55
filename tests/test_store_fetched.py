"""`get_many` keeps the rows it read at the store's write generation (`_Fetched`) and hands a
repeated chunk out again without reading it: whatever was written in between (by this store or
another connection), rolled back or not, every answer equals a fresh read of the file, and the
kept rows stay within their bound."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_cases import EMB, version

from docket.store import sqlite_read
from docket.store.access import Principal
from docket.store.sqlite import SQLiteStore
from docket.store.sqlite_read import _Fetched


def _store(tmp_path: Path) -> Path:
    p = tmp_path / "s.db"
    s = SQLiteStore(p)
    s.set_meta({"embedder": EMB.name, "dim": str(EMB.dim)})
    for d in range(6):
        s.write_version(version(f"d{d}", 1, [f"text {d} one", f"text {d} two"], acl=None if d % 2 else ("user:ann",)))
    s.close()
    return p


def _fresh(p: Path, ids: list[str]) -> dict[str, object]:
    """The same ids read by a store opened now (nothing kept)."""
    s = SQLiteStore(p, read_only=True)
    try:
        return {cid: c.model_dump() for cid, c in s.get_many(ids).items()}
    finally:
        s.close()


def _fresh_version(p: Path, doc: str, version: int) -> list[object]:
    s = SQLiteStore(p, read_only=True)
    try:
        return [c.model_dump() for c in s.chunks_of(doc, version)]
    finally:
        s.close()


DOCS = [f"d{d}" for d in range(8)]
WHO = [None, Principal("user:ann"), Principal("user:bob"), Principal("user:cy", frozenset({"group:hr"}))]


def _fresh_versions(p: Path, who: Principal | None) -> dict[str, object]:
    s = SQLiteStore(p, read_only=True)
    try:
        return s.readable_versions_of(DOCS, who)  # type: ignore[return-value]
    finally:
        s.close()


def _dumped(got: dict[str, object]) -> dict[str, object]:
    return {cid: c.model_dump() for cid, c in got.items()}  # type: ignore[attr-defined]


IDS = [f"d{d}-v{v}-{i}" for d in range(8) for v in (1, *range(10, 18)) for i in range(3)]
#: what happens between two fetches: a write through the store itself, through another connection,
#: a write that rolls back, an acl change, a delete, or nothing
STEPS = st.lists(st.tuples(st.sampled_from(["self", "other", "rollback", "acl", "delete", "none"]),
                           st.integers(0, 7), st.lists(st.sampled_from(IDS), max_size=8)), min_size=1, max_size=8)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS)
def test_kept_rows_equal_a_fresh_read(tmp_path_factory: pytest.TempPathFactory, steps) -> None:  # noqa: ANN001
    p = _store(tmp_path_factory.mktemp("f"))
    s = SQLiteStore(p)
    for n, (what, d, ids) in enumerate(steps):  # each write a higher version than any before: always accepted
        s.get_many(IDS)  # everything kept at the current generation
        for who in WHO:
            s.readable_versions_of(DOCS, who)
        if what == "self":
            s.write_version(version(f"d{d}", 10 + n, [f"new {n} text", f"new {n} more", "third"]))
        elif what == "other":
            other = SQLiteStore(p)
            other.write_version(version(f"d{d}", 10 + n, [f"changed {n}", "changed too"], acl=("group:hr",)))
            other.close()
        elif what == "rollback":
            with pytest.raises(RuntimeError), s._transaction() as cur:
                cur.execute("UPDATE chunks SET text = 'rolled back' WHERE doc = ?", (f"d{d}",))
                inside = s.get_many(IDS)  # uncommitted rows: read, never kept
                assert all(c.text == "rolled back" for c in inside.values() if c.doc == f"d{d}")
                raise RuntimeError("roll back")
        elif what == "acl":
            s.write_version(version(f"d{d}", 10 + n, [f"text {d} one", f"text {d} two"], acl=("user:bob",)))
        elif what == "delete":
            s.delete(f"d{d}")
        asked = [*ids, *IDS]
        assert _dumped(s.get_many(asked)) == _fresh(p, asked)
        for who in WHO:  # the readable versions, kept per acl, equal a fresh listing
            assert s.readable_versions_of(DOCS, who) == _fresh_versions(p, who)
        for v in (1, 10 + n):  # a version's chunks, through the kept rows, equal a fresh read in order
            assert [c.model_dump() for c in s.chunks_of(f"d{d}", v)] == _fresh_version(p, f"d{d}", v)
        with s.snapshot():
            assert _dumped(s.get_many(ids)) == _fresh(p, ids)
    s.close()


def test_a_repeated_fetch_hands_out_the_same_chunk_and_offers_it_again(tmp_path: Path) -> None:
    s = SQLiteStore(_store(tmp_path))
    first = s.get_many(["d1-v1-0", "d2-v1-1"])
    s.features.clear()  # the feature cache let everything go: the kept rows are offered to it again
    again = s.get_many(["d2-v1-1", "missing", "d1-v1-0"])
    assert set(again) == {"d2-v1-1", "d1-v1-0"}
    assert again["d1-v1-0"] is first["d1-v1-0"]
    assert len(s.features._offered) == 2  # type: ignore[attr-defined]
    s.write_version(version("d9", 1, ["something new"]))
    assert s.get_many(["d1-v1-0"])["d1-v1-0"] is not first["d1-v1-0"]  # a write empties what was kept
    with s._transaction():
        assert [c.id for c in s.chunks_of("d1", 1)] == ["d1-v1-0", "d1-v1-1"]  # inside a write: read as it stands
    s.close()


def test_kept_rows_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_read, "FETCHED_ROWS", 4)
    s = SQLiteStore(_store(tmp_path))
    ids = [f"d{d}-v1-{i}" for d in range(6) for i in range(2)]
    for cid in ids:
        assert s.get_many([cid])[cid].id == cid
        assert s._fetched is not None and len(s._fetched) <= 4
    assert _dumped(s.get_many(ids)) == _fresh(s.path, ids)
    s.close()


def test_fetched_halves() -> None:
    kept = _Fetched(4).at("1")
    row = (object(), "record", object())
    for cid in "abc":
        kept.put(cid, row)  # type: ignore[arg-type]
    assert set(kept.young) == {"c"} and set(kept.old) == {"a", "b"}
    assert kept.get("a") is row  # met again: moved to the newer half, which filled and became the older
    assert set(kept.old) == {"c", "a"} and not kept.young and kept.get("b") is None  # b, not met again, went
    assert kept.at("1") is kept and len(kept) == 2
    assert len(kept.at("2")) == 0  # another generation: emptied



def test_a_row_without_its_record_is_kept_while_the_records_stamp_holds() -> None:
    kept = _Fetched(8).at("1")  # no stamp: a row without its record is not kept
    bare, full = (object(), None, object()), (object(), "record", object())
    kept.put("a", bare)  # type: ignore[arg-type]
    assert kept.get("a") is None
    kept.at("1", (5, 0)).put("a", bare)  # type: ignore[arg-type]
    kept.put("b", full)  # type: ignore[arg-type]
    assert kept.at("1", (5, 0)).get("a") is bare
    assert kept.at("1", (6, 0)).get("a") is None and kept.get("b") is full  # the records may have changed
    kept.put("a", bare)  # type: ignore[arg-type]
    assert kept.at("1", (6, 1)).get("a") is None  # a change through this connection
    kept.put("a", bare)  # type: ignore[arg-type]
    assert kept.at("1", None).get("a") is None and kept.get("b") is full


def test_kept_rows_offer_records_filled_later(tmp_path: Path) -> None:
    """Rows read before their records existed are kept (a repeat fetch reads nothing), and once
    a record is written, by another connection or this one, without a new generation, the next
    fetch reads the rows again and offers the record."""
    p = _store(tmp_path)
    s = SQLiteStore(p)
    s._conn.execute("DELETE FROM chunk_features")  # as an import leaves a store
    s.close()
    s = SQLiteStore(p)
    ids = ["d1-v1-0", "d2-v1-1", "d3-v1-0"]
    first = s.get_many(ids)
    again = s.get_many(ids)
    assert all(again[cid] is first[cid] for cid in ids)  # kept without a record
    generation = s.generation()
    for n, writer in enumerate(("other", "self")):
        w = SQLiteStore(p) if writer == "other" else s
        with w._lock:
            w._conn.execute("BEGIN IMMEDIATE")
            w._conn.execute("INSERT INTO chunk_features SELECT rowid, ? FROM chunks WHERE id = ?",
                            (f'{{"by": "{writer}"}}', ids[n]))
            w._conn.execute("COMMIT")
        if w is not s:
            w.close()
        assert s.generation() == generation  # as fill_records writes: no new generation
        s.features.clear()
        got = s.get_many(ids)
        assert got[ids[n]] is not first[ids[n]]  # read again: its record is offered
        offered = s.features._offered.get(id(got[ids[n]]))  # type: ignore[attr-defined]
        assert offered is not None and writer in str(offered[1])
        first = got
    assert s.get_many(ids)[ids[2]] is first[ids[2]]  # nothing written since: kept again
    s.close()


def test_kept_version_lists_are_bounded_and_of_one_generation() -> None:
    from docket.store.sqlite_read import _Listed

    kept = _Listed(4).at("1")
    for d in range(9):
        kept.put(("public", f"d{d}"), [])
        assert len(kept.lists) <= 4
    assert kept.at("1").lists and not kept.at("2").lists  # another generation: emptied
