"""The SQLite store keeps its search index in a snapshot file next to the database: a new
process maps it instead of reading every row, brings it up to date from the change log, and
answers exactly as a full load would. A file it cannot vouch for is ignored, never trusted."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_cases import version
from test_store_refresh import ACLS, OPS, _answers, _open, _seed_store, _texts, apply_op

from docket.store import snapshot
from docket.store.protocol import Filters, Principal
from docket.store.sqlite import SQLiteStore


@pytest.fixture(autouse=True)
def _snapshots_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKET_INDEX_SNAPSHOT", "1")  # the test stores are far below the default size


def _full_load_answers(path: Path, monkeypatch: pytest.MonkeyPatch) -> list[list[tuple[str, float]]]:
    """What a process that reads every row answers (snapshots off for it)."""
    with monkeypatch.context() as m:
        m.setenv("DOCKET_INDEX_SNAPSHOT", "0")
        s = _open(path)
        out = _answers(s)
        s.close()
    return out


def _no_full_load(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: SQLiteStore, gen: str, save: bool = False) -> None:
        raise AssertionError("read every row although a usable snapshot was there")

    monkeypatch.setattr(SQLiteStore, "_load_index", refuse)


def test_a_new_process_maps_the_snapshot_and_answers_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.db"
    _seed_store(path)
    first = _open(path)
    want = _answers(first)  # the full load writes the snapshot
    assert first.snapshot_path.is_file()
    with monkeypatch.context() as m:
        _no_full_load(m)
        second = _open(path)
        assert _answers(second) == want
        m_index = second._index
        assert m_index is not None and not m_index.mat.flags.writeable  # mapped, not copied
    assert want == _full_load_answers(path, monkeypatch)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_a_snapshot_behind_the_store_is_brought_up_to_date(tmp_path_factory: pytest.TempPathFactory,
                                                           monkeypatch: pytest.MonkeyPatch, ops) -> None:  # noqa: ANN001
    path = tmp_path_factory.mktemp("snap") / "s.db"
    _seed_store(path)
    _answers(_open(path))  # writes the snapshot
    written = path.with_name(path.name + ".index").stat().st_mtime_ns
    writer = _open(path)
    for kind, d, seed in ops:
        apply_op(writer, kind, d, seed)
    late = _open(path)
    assert _answers(late) == _full_load_answers(path, monkeypatch)
    m = late._index
    assert m is not None
    if path.with_name(path.name + ".index").stat().st_mtime_ns == written:
        assert m.base_rows == 120  # the snapshot's 40 documents x 3 rows, with the log applied on top


def test_writes_after_the_snapshot_are_applied_from_the_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.db"
    _seed_store(path)
    _answers(_open(path))
    w = _open(path)
    w.write_version(version("d7", 2, ["refund window of thirty days"]))  # d7 v1 superseded, v2 added
    w.write_version(version("d9", 1, _texts(9, 3), acl=("user:ann",)))  # same rows, new ACL
    w.delete("d11")
    want = _full_load_answers(path, monkeypatch)
    with monkeypatch.context() as m:
        _no_full_load(m)
        late = _open(path)
        assert _answers(late) == want
        index = late._index
        assert index is not None and index.base_rows == 120 and index.alive is not None  # snapshot + log


def test_an_acl_change_after_the_snapshot_reaches_a_new_process(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The same rows with another ACL (nothing to count): the log, not the snapshot, decides."""
    path = tmp_path / "s.db"
    _seed_store(path)  # d0 is public (ACLS[0] is None)
    _answers(_open(path))
    w = _open(path)
    w.write_version(version("d0", 1, _texts(0, 3), acl=("user:ann",)))
    late = _open(path)
    hits = {c for c, _ in late.search_bm25(" ".join(_texts(0, 3)), 200, Filters())}
    assert not any(c.startswith("d0-") for c in hits)  # anonymous: d0 is no longer public
    assert _answers(late) == _full_load_answers(path, monkeypatch)


def test_a_store_made_again_at_the_same_path_does_not_read_the_old_snapshot(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The database deleted and indexed again with the same documents under other ACLs: the same
    generation, log position, row count and row ids, but not the same store. Its ACLs decide."""
    path = tmp_path / "s.db"
    _seed_store(path)
    first = _open(path)
    _answers(first)  # the snapshot of the first store: d0, d4, d8, ... public
    first.close()
    for f in (path, Path(str(path) + "-wal"), Path(str(path) + "-shm")):
        f.unlink(missing_ok=True)
    other = [None if a is None else tuple(e.replace("ann", "eve").replace("finance", "legal") for e in a) for a in ACLS]
    s = _open(path)
    for d in range(40):  # the same rows and as many ACL entries, given to other people
        s.write_version(version(f"d{d}", 1, _texts(d, 3), acl=other[d % len(other)]))
    s.close()
    again = _open(path)
    ann = Filters(principal=Principal("ann", frozenset({"finance"})))
    assert not any(c.startswith(("d1-", "d2-")) for c, _ in again.search_bm25(" ".join(_texts(1, 3)), 200, ann))
    assert _answers(again) == _full_load_answers(path, monkeypatch)


@pytest.mark.parametrize("older", [True, False])
def test_a_store_made_before_snapshots_gets_one_without_being_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                      older: bool) -> None:
    """A store written by an older docket (no store_id, no write tokens) and then only read: its
    first open gives it an identity and a token for the generation it is at, so the second process
    maps the snapshot the first one wrote."""
    import sqlite3

    path = tmp_path / "s.db"
    _seed_store(path)
    forget = ("DROP TABLE write_tokens; DELETE FROM meta WHERE key = 'store_id';" if older
              else "DELETE FROM write_tokens WHERE generation = (SELECT CAST(value AS INTEGER) FROM meta "
                   "WHERE key = 'generation');")  # the table there, the last write by a docket without tokens
    conn = sqlite3.connect(path)
    conn.executescript(forget)
    conn.close()
    reader = SQLiteStore(path)
    want = _answers(reader)
    assert reader.snapshot_path.is_file()
    reader.close()
    with monkeypatch.context() as m:
        _no_full_load(m)
        again = SQLiteStore(path)
        assert _answers(again) == want


def test_a_copy_that_went_its_own_way_does_not_read_the_other_copy_s_snapshot(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Two copies of one store (same identity), each written once more with the same shape of
    change (same generation, log position and counts), one snapshot put beside the other: the
    write token of that generation tells them apart."""
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    _seed_store(a)
    shutil.copy(a, b)
    for path, text in ((a, "the refund window is thirty days"), (b, "the salary bands are reviewed yearly")):
        w = _open(path)
        w.write_version(version("d5", 2, [text]))
        w.close()
    sa = _open(a)
    _answers(sa)  # a's snapshot, of a's latest state
    sa.close()
    shutil.copy(a.with_name("a.db.index"), b.with_name("b.db.index"))
    again = _open(b)
    hits = [c for c, _ in again.search_bm25("salary bands reviewed yearly", 3, Filters())]
    assert hits[:1] == ["d5-v2-0"]
    assert _answers(again) == _full_load_answers(b, monkeypatch)


def test_a_snapshot_whose_arrays_disagree_with_its_counts_is_ignored(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.db"
    _seed_store(path)
    s = _open(path)
    want = _answers(s)
    fields, arrays, strings = snapshot.read(s.snapshot_path)  # type: ignore[misc]
    public = np.array(arrays["public"])
    public[:] = True  # every row public: what a tampered or corrupted file could claim
    snapshot.write(s.snapshot_path, fields, {**arrays, "public": public}, strings)
    with monkeypatch.context() as m:
        calls: list[bool] = []
        real = SQLiteStore._load_index

        def spy(self: SQLiteStore, gen: str, save: bool = False) -> object:
            calls.append(True)
            return real(self, gen, save)

        m.setattr(SQLiteStore, "_load_index", spy)
        again = _open(path)
        assert _answers(again) == want
        assert calls  # read in full, not from the file


def test_a_snapshot_of_a_later_state_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A database restored from a backup older than its snapshot file: the file describes rows the
    database does not hold any more, so it is ignored."""
    path = tmp_path / "s.db"
    _seed_store(path)
    backup = tmp_path / "backup.db"
    shutil.copy(path, backup)
    w = _open(path)
    for d in range(5):
        w.write_version(version(f"d{d}", 2, ["a brand new refund window"]))
    w.close()
    later = _open(path)
    _answers(later)  # the snapshot of the later state
    later.close()
    shutil.copy(backup, path)
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    restored = _open(path)
    assert _answers(restored) == _full_load_answers(path, monkeypatch)
    assert not any(c.startswith("d0-v2") for c, _ in restored.search_bm25("brand new refund window", 10, Filters()))


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty", "header", "rows"])
def test_a_damaged_snapshot_is_ignored_and_rewritten(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      damage: str) -> None:
    path = tmp_path / "s.db"
    _seed_store(path)
    s = _open(path)
    want = _answers(s)
    snap = s.snapshot_path
    raw = snap.read_bytes()
    if damage == "truncate":
        snap.write_bytes(raw[: len(raw) // 2])
    elif damage == "garbage":
        snap.write_bytes(os.urandom(len(raw)))
    elif damage == "empty":
        snap.write_bytes(b"")
    elif damage == "header":  # a valid file whose header claims an array past its end
        fields, arrays, strings = snapshot.read(snap)  # type: ignore[misc]
        snapshot.write(snap, fields, {**arrays, "mat": np.zeros((1, 1), dtype=np.float32)}, strings)
    else:  # a valid file whose rows do not match the ids it lists
        fields, arrays, strings = snapshot.read(snap)  # type: ignore[misc]
        snapshot.write(snap, fields, arrays, {**strings, "ids": strings["ids"][:-1]})
    again = _open(path)
    assert _answers(again) == want
    assert snapshot.read(again.snapshot_path) is not None  # the full load wrote a good one


def test_a_pruned_log_means_a_full_load_and_a_new_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import docket.store.sqlite_write as sq

    path = tmp_path / "s.db"
    _seed_store(path, docs=20)
    _answers(_open(path))
    monkeypatch.setattr(sq, "_LOG_KEEP", 1)
    w = _open(path)
    w.write_version(version("d3", 2, ["a new refund rule"]))
    w.write_version(version("d4", 2, ["another refund rule"]))
    late = _open(path)
    assert [c for c, _ in late.search_bm25("another refund rule", 1, Filters())] == ["d4-v2-0"]
    m = late._index
    assert m is not None and m.base_rows == w.count()
    assert snapshot.read(late.snapshot_path)[0]["rows"] == w.count()  # type: ignore[index]


def test_small_stores_and_the_setting_write_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.db"
    _seed_store(path, docs=5)
    monkeypatch.delenv("DOCKET_INDEX_SNAPSHOT")  # the default: only stores of SNAPSHOT_MIN_ROWS rows or more
    s = _open(path)
    s.search_bm25("refund", 3, Filters())
    assert not s.snapshot_path.exists()
    monkeypatch.setenv("DOCKET_INDEX_SNAPSHOT", "0")
    import docket.store.sqlite_search as sq

    monkeypatch.setattr(sq, "SNAPSHOT_MIN_ROWS", 1)
    t = _open(path)
    t.search_bm25("refund", 3, Filters())
    assert not t.snapshot_path.exists()
    monkeypatch.delenv("DOCKET_INDEX_SNAPSHOT")
    u = _open(path)
    u.search_bm25("refund", 3, Filters())
    assert u.snapshot_path.exists()


def test_an_unwritable_place_costs_nothing_but_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.db"
    _seed_store(path)

    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(snapshot, "write", full_disk)
    s = _open(path)
    assert _answers(s) == _full_load_answers(path, monkeypatch)
    assert not s.snapshot_path.exists()


def test_the_snapshot_is_as_readable_as_the_store(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _seed_store(path)
    os.chmod(path, 0o640)
    s = _open(path)
    s.search_bm25("refund", 3, Filters())
    assert stat.S_IMODE(s.snapshot_path.stat().st_mode) == 0o640


_DTYPES = st.sampled_from([np.float32, np.float64, np.int32, np.int64, np.uint16, np.bool_])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(_DTYPES, st.integers(0, 5), st.integers(1, 4)), max_size=5),
       st.lists(st.text(max_size=8), max_size=6))
def test_snapshot_files_give_back_what_was_written(tmp_path_factory: pytest.TempPathFactory,
                                                   specs: list[tuple[type, int, int]], words: list[str]) -> None:
    path = tmp_path_factory.mktemp("file") / "x.index"
    rng = np.random.default_rng(len(specs))
    arrays = {f"a{i}": (rng.random((n, w)) * 100).astype(dt) for i, (dt, n, w) in enumerate(specs)}
    snapshot.write(path, {"seq": 3, "note": "é"}, dict(arrays), {"ids": words})
    got = snapshot.read(path)
    assert got is not None
    fields, back, strings = got
    assert fields == {"seq": 3, "note": "é"} and strings == {"ids": words}
    assert set(back) == set(arrays)
    for k, a in arrays.items():
        assert back[k].dtype == a.dtype and back[k].shape == a.shape and np.array_equal(back[k], a)
    assert not list(path.parent.glob("*.tmp"))  # the temporary file was renamed, not left behind


def test_a_missing_or_foreign_file_reads_as_none(tmp_path: Path) -> None:
    assert snapshot.read(tmp_path / "none.index") is None
    (tmp_path / "foreign.index").write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    assert snapshot.read(tmp_path / "foreign.index") is None
    (tmp_path / "dir.index").mkdir()
    assert snapshot.read(tmp_path / "dir.index") is None


def test_postings_order_by_term_is_the_stable_sort_whatever_the_term_ids() -> None:
    """`_by_term` (16-bit radix where every id fits) orders postings as a stable sort does."""
    from docket.store.sqlite_index import _by_term

    rng = np.random.default_rng(5)
    for high in (3, 0xFFFF, 0x10000, 2**31 - 1):
        terms = rng.integers(0, high + 1, size=5000).astype(np.int32)
        terms[::7] = terms[0]  # ties: their order must be kept
        assert np.array_equal(_by_term(terms), np.argsort(terms, kind="stable"))
    assert _by_term(np.zeros(0, dtype=np.int32)).shape == (0,)
