"""Approximate dense search on SQLite (issue 22): the IVF index in `FILE.ann` follows writes, a
missing, stale, damaged or foreign file is rebuilt and never trusted, access stays exact (only
readable rows, never fewer than k when k exist), and search is exact below the size threshold,
for a very selective filter, on request (`Filters.exact`, `docket ask --exact`) and by setting."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from acl_cases import APPROXIMATE, approximate_dense
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_cases import EMB, qvec, version
from test_store_refresh import ACLS, ASKERS, QUERIES, _texts

from docket.errors import InputError
from docket.store import sqlite_ann
from docket.store.protocol import Filters, Principal
from docket.store.sqlite import SQLiteStore
from docket.store.sqlite_ann import AnnIndex, AnnSettings

#: truly approximate on a small store: 8 lists, one probed
LOOSE = AnnSettings(min_rows=0, exact_below=0, nlist=8, nprobe=1, cheaper_exact=False)
#: every list probed: the index path answers exactly as exact search does
THOROUGH = AnnSettings(min_rows=0, exact_below=0, nlist=8, nprobe=8, cheaper_exact=False)


def _open(path: Path, ann: AnnSettings | None = THOROUGH) -> SQLiteStore:
    s = SQLiteStore(path)
    s.set_meta({"embedder": EMB.name, "dim": str(EMB.dim)})
    s.ann = ann
    return s


def _seed(path: Path, docs: int = 60) -> None:
    s = _open(path)
    for d in range(docs):
        s.write_version(version(f"d{d}", 1, _texts(d, 3), acl=ACLS[d % len(ACLS)]))
    s.close()


def _exact(s: SQLiteStore, q: str, k: int, f: Filters) -> list[tuple[str, float]]:
    return s.search_dense(qvec(q), k, Filters(**{**f.__dict__, "exact": True}))


def _answers(s: SQLiteStore, k: int = 8) -> list[list[tuple[str, float]]]:
    return [s.search_dense(qvec(q), k, f) for f in ASKERS for q in QUERIES]


def _exact_answers(s: SQLiteStore, k: int = 8) -> list[list[tuple[str, float]]]:
    return [_exact(s, q, k, f) for f in ASKERS for q in QUERIES]


@pytest.fixture()
def path(tmp_path: Path) -> Path:
    p = tmp_path / "s.db"
    _seed(p)
    return p


def _count_builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    built: list[int] = []
    real = AnnIndex.build.__func__  # type: ignore[attr-defined]

    def counting(cls: type[AnnIndex], *args: Any, **kwargs: Any) -> AnnIndex:
        built.append(1)
        return real(cls, *args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(AnnIndex, "build", classmethod(counting))
    return built


# --- access: exact under approximation ----------------------------------------------------------

@pytest.fixture(scope="module")
def loose(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("ann") / "s.db"
    _seed(path)
    s = _open(path, LOOSE)
    yield s
    s.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(k=st.integers(1, 60), asker=st.sampled_from(ASKERS), q=st.sampled_from(QUERIES),
       extra=st.sampled_from([(), ("d1", "d2", "d3", "d5", "d8", "d13")]))
def test_approximate_search_returns_only_readable_rows_and_k_of_them(loose: SQLiteStore, k: int, asker: Filters,
                                                                     q: str, extra: tuple[str, ...]) -> None:
    s = loose
    f = Filters(**{**asker.__dict__, "docs": asker.docs or extra})
    everything = dict(_exact(s, q, 10_000, f))  # every row the asker may read and the filter passes
    got = s.search_dense(qvec(q), k, f)
    assert s.last_dense in ("approximate", "exact-fallback") or not everything
    assert len(got) == min(k, len(everything))  # never fewer than k when k exist
    for cid, score in got:
        assert cid in everything  # never a row the asker may not read (or the filter drops)
        assert score == everything[cid]  # re-scored as exact search scores it
    assert [x for _, x in got] == sorted((x for _, x in got), reverse=True)


def _random_store(path: Path, seed: int, docs: int) -> np.ndarray:
    """A store of `docs` documents of 1-4 chunks with random ACLs and random unit vectors drawn
    around a few centres (so lists are uneven and near-copies exist), some exact copies among
    them; the vectors in row order."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(5, EMB.dim))
    s = _open(path, None)
    rows = []
    for d in range(docs):
        n = int(rng.integers(1, 5))
        vecs = centres[rng.integers(0, 5, size=n)] + rng.normal(scale=0.4, size=(n, EMB.dim))
        if d % 7 == 3 and rows:
            vecs[0] = rows[-1]  # a copy of the previous chunk
        vecs = (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(np.float32)
        rows += list(vecs)
        v = version(f"d{d}", 1, [f"chunk {d} {i}" for i in range(n)], acl=ACLS[int(rng.integers(0, len(ACLS)))])
        s.write_version(dataclasses.replace(v, vectors=vecs))
    s.close()
    return np.asarray(rows)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(seed=st.integers(0, 2**16), docs=st.integers(20, 70), k=st.integers(1, 50), nprobe=st.integers(1, 4),
       asker=st.sampled_from(ASKERS), pick=st.integers(0, 3))
def test_random_vectors_give_only_readable_rows_with_their_exact_scores(tmp_path_factory: pytest.TempPathFactory,
                                                                       seed: int, docs: int, k: int, nprobe: int,
                                                                       asker: Filters, pick: int) -> None:
    """Random vectors, ACLs and probes (the 8-bit codes then rank candidates truly approximately):
    every result is a row the asker may read and the filter passes, scored with the store's exact
    cosine, best first, and k of them whenever k exist."""
    path = tmp_path_factory.mktemp("rand") / "s.db"
    mat = _random_store(path, seed, docs)
    s = _open(path, AnnSettings(min_rows=0, exact_below=0, nlist=8, nprobe=nprobe, cheaper_exact=False))
    q = mat[(seed * 7 + pick) % mat.shape[0]] + np.random.default_rng(pick).normal(scale=0.2, size=EMB.dim)
    q = (q / np.linalg.norm(q)).astype(np.float32)
    everything = dict(s.search_dense(q, 10_000, Filters(**{**asker.__dict__, "exact": True})))
    got = s.search_dense(q, k, asker)
    assert s.last_dense in ("approximate", "exact-fallback") or not everything
    assert len(got) == min(k, len(everything))
    for cid, score in got:
        assert cid in everything and score == everything[cid]
    assert [x for _, x in got] == sorted((x for _, x in got), reverse=True)
    s.close()


def test_scores_are_the_exact_cosines_not_the_codes(path: Path) -> None:
    """The index ranks by 8-bit codes, whose scores differ from the cosines; what a search
    returns is the store's own cosine of each row (float64 over its float32 vector)."""
    s = _open(path, LOOSE)
    q = qvec("refund window")
    got = s.search_dense(q, 10, Filters(unrestricted=True))
    assert s.last_dense == "approximate"
    ann = s._ann
    assert ann is not None and sqlite_ann.is_ours(ann.index)
    m = s._search_index()
    pos = m.live_in_rowid_order()
    vec = {m.ids[int(i)]: m.mat[int(i)] for i in pos}
    for cid, score in got:
        assert score == float((vec[cid].astype(np.float64) * q.astype(np.float64)).sum())
    coded, ids = ann.index.search(q.reshape(1, -1).astype(np.float32), 10)
    exact = {int(m.rowids[i]): float(m.mat[i] @ q) for i in pos}
    assert any(abs(c - exact[int(r)]) > 1e-6 for c, r in zip(coded[0], ids[0]) if r >= 0)  # the codes are approximate


def test_the_acl_parametrisation_really_searches_approximately(path: Path) -> None:
    with approximate_dense():
        s = SQLiteStore(path)
        s.search_dense(qvec("refund window"), 5, Filters(principal=Principal("ann")))
        assert s.last_dense == "approximate" and s.ann == APPROXIMATE
        s.close()


def test_with_every_list_probed_it_answers_as_exact_search(path: Path) -> None:
    s = _open(path)
    s.search_dense(qvec("refund"), 3, Filters())
    assert s.last_dense == "approximate"
    assert _answers(s) == _exact_answers(s)


# --- when it is exact -----------------------------------------------------------------------------

def test_exact_below_the_size_threshold_on_request_and_for_a_selective_filter(path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    s = _open(path, AnnSettings(min_rows=181, exact_below=0))  # the store holds 180 rows
    s.search_dense(qvec("refund"), 5, Filters())
    assert s.last_dense == "exact" and not s.ann_path.exists()
    s.ann = AnnSettings(min_rows=180, exact_below=0, nprobe=1)
    s.search_dense(qvec("refund"), 5, Filters(unrestricted=True))
    assert s.last_dense == "approximate" and s.ann_path.exists()
    s.search_dense(qvec("refund"), 5, Filters(unrestricted=True, exact=True))
    assert s.last_dense == "exact"
    s.ann = AnnSettings(min_rows=0, exact_below=20)  # d1 and d2 hold 6 rows: fewer than 20
    s.search_dense(qvec("refund"), 5, Filters(docs=("d1", "d2"), unrestricted=True))
    assert s.last_dense == "exact"
    s.ann = AnnSettings(min_rows=0, exact_below=0, nlist=8, nprobe=2)  # 2 of 8 lists: ~45 rows scanned
    s.search_dense(qvec("refund"), 5, Filters(docs=tuple(f"d{i}" for i in range(20)), unrestricted=True))
    assert s.last_dense == "exact"  # 60 rows pass, probed x2.25 (share 1/3): the scan is cheaper
    s.search_dense(qvec("refund"), 5, Filters(unrestricted=True))
    assert s.last_dense == "approximate"
    s.close()
    monkeypatch.setenv("DOCKET_DENSE_SEARCH", "exact")
    monkeypatch.setenv("DOCKET_ANN_MIN_ROWS", "0")
    t = _open(path, None)
    t.search_dense(qvec("refund"), 5, Filters())
    assert t.last_dense == "exact" and t.ann == AnnSettings(mode="exact", min_rows=0)


def test_too_few_from_the_index_falls_back_to_exact(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When the index finds fewer than k rows the filter passes (a selective filter, lists not
    probed), the search is exact over the rows the filter passes."""
    s = _open(path, LOOSE)
    real = AnnIndex.search
    monkeypatch.setattr(AnnIndex, "search", lambda self, *a: real(self, *a)[:3])
    f = Filters(docs=("d0", "d4", "d8"))  # public documents, 9 rows
    got = s.search_dense(qvec("salary"), 9, f)
    assert s.last_dense == "exact-fallback"
    assert got == _exact(s, "salary", 9, f) and len(got) == 9
    s.search_dense(qvec("salary"), 3, f)
    assert s.last_dense == "approximate"  # three were enough


@pytest.mark.parametrize(("name", "value"), [("DOCKET_DENSE_SEARCH", "fast"), ("DOCKET_ANN_MIN_ROWS", "many"),
                                             ("DOCKET_ANN_MIN_ROWS", "-1")])
def test_a_bad_setting_is_one_line_naming_it(name: str, value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(InputError, match=name) as e:
        AnnSettings.from_env()
    assert value in str(e.value) and "\n" not in str(e.value)


# --- the file: written, followed, rebuilt, never trusted --------------------------------------------

def test_a_new_process_reads_the_file_instead_of_building(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    want = _answers(_open(path))
    built = _count_builds(monkeypatch)
    again = _open(path)
    assert _answers(again) == want and not built


def test_the_index_follows_inserts_and_deletes_by_another_connection(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reader, writer = _open(path), _open(path)
    _answers(reader)
    built = _count_builds(monkeypatch)
    writer.write_version(version("new", 1, ["salary bands finance salary bands", "refund window"]))
    writer.delete("d3")
    writer.write_version(version("d5", 1, _texts(5, 3), acl=("group:finance",)))  # an ACL change
    assert _answers(reader) == _exact_answers(reader)
    assert "new-v1-0" in [c for c, _ in reader.search_dense(qvec("salary bands finance"), 3, Filters())]
    assert not any(c.startswith("d3-") for a in _answers(reader, 200) for c, _ in a)
    assert not built  # applied from the change log
    fresh = _open(path)  # a new process: the file is older than the store; the log brings it up
    assert _answers(fresh) == _exact_answers(fresh) and not built


def test_a_file_read_by_a_new_process_is_mapped_and_copied_to_memory_before_it_changes(
        path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lists of a file a process reads are a read-only map (a cold search reads only the
    lists it probes); the first write it must follow copies them into memory from the map, so
    the index changes, answers exactly, and is written back as a file of its own."""
    want = _answers(_open(path))
    built = _count_builds(monkeypatch)
    reader, writer = _open(path), _open(path)
    assert _answers(reader) == want
    assert reader._ann is not None and reader._ann.mapped and not built
    mapped_lists = __import__("faiss").downcast_InvertedLists(reader._ann.index.invlists)
    assert mapped_lists.prefetch_nthread == 0  # no threads started for every search (~2 ms each)
    writer.write_version(version("new", 1, ["salary bands finance salary bands", "refund window"]))
    writer.delete("d3")
    assert _answers(reader) == _exact_answers(reader)
    assert not reader._ann.mapped and not built
    assert "new-v1-0" in [c for c, _ in reader.search_dense(qvec("salary bands finance"), 3, Filters())]
    reader._ann_save(reader._ann, reader._search_index())
    got = sqlite_ann.read(reader.ann_path, mapped=True)
    assert got is not None and got[0].mapped and got[0].rows == writer.count()
    assert _answers(_open(path)) == _exact_answers(writer) and not built


def test_a_mapped_index_stays_whole_when_its_file_is_replaced(path: Path) -> None:
    """A newer file renamed over the one a process mapped leaves that process's map intact: it
    is copied from the map (its own state), never read again from the path."""
    _answers(_open(path))  # the file written
    a, stamp = sqlite_ann.read(path.with_name("s.db.ann"), mapped=True)  # type: ignore[misc]
    before = np.sort(a.ids())
    other, _ = sqlite_ann.read(path.with_name("s.db.ann"))  # type: ignore[misc]
    other.index.remove_ids(__import__("faiss").IDSelectorBatch(before[:5]))
    sqlite_ann.write(path.with_name("s.db.ann"), other, {k: v for k, v in stamp.items()
                                                         if k in ("store_id", "generation", "token", "dim")})
    a.to_memory()
    assert not a.mapped and np.array_equal(np.sort(a.ids()), before)


def test_a_file_that_cannot_be_mapped_is_read_not_rebuilt(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import faiss

    want = _answers(_open(path))
    real = faiss.read_index

    def no_map(name: str, flags: int = 0) -> Any:
        if flags & faiss.IO_FLAG_MMAP:
            raise RuntimeError("mmap failed")
        return real(name, flags)

    monkeypatch.setattr(faiss, "read_index", no_map)
    built = _count_builds(monkeypatch)
    again = _open(path)
    assert _answers(again) == want and not built
    assert again._ann is not None and not again._ann.mapped


def test_many_changes_are_written_back_to_the_file(path: Path) -> None:
    reader, writer = _open(path), _open(path)
    _answers(reader)
    seq0 = sqlite_ann.read(reader.ann_path)[0].seq  # type: ignore[index]
    for d in range(60, 400):
        writer.write_version(version(f"d{d}", 1, _texts(d, 3)))
    reader.search_dense(qvec("refund"), 3, Filters())
    got = sqlite_ann.read(reader.ann_path)
    assert got is not None and got[0].seq > seq0 and got[0].rows == writer.count()


def _truncate(p: Path) -> None:
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])


def _foreign(p: Path) -> None:
    p.write_bytes(b"not an index at all" * 100)


def _flip_ids(p: Path) -> None:
    """A whole file whose lists hold other rowids than the store's."""
    a, stamp = sqlite_ann.read(p)  # type: ignore[misc]
    ids = a.ids()
    a.index.remove_ids(__import__("faiss").IDSelectorBatch(ids[:1]))
    vec = np.zeros((1, a.index.d), dtype=np.float32)
    vec[0, 0] = 1
    a.index.add_with_ids(vec, np.asarray([10**9], dtype=np.int64))
    sqlite_ann.write(p, a, {k: v for k, v in stamp.items() if k in ("store_id", "generation", "token", "dim")})


def _scramble_vectors(p: Path) -> None:
    """Right rowids, wrong vectors (the same vector everywhere)."""
    a, stamp = sqlite_ann.read(p)  # type: ignore[misc]
    ids = np.sort(a.ids())
    vec = np.zeros((ids.size, a.index.d), dtype=np.float32)
    vec[:, 0] = 1
    a.index.reset()
    a.index.add_with_ids(vec, ids)
    sqlite_ann.write(p, a, {k: v for k, v in stamp.items() if k in ("store_id", "generation", "token", "dim")})


def _bad_stamp(p: Path) -> None:
    a, stamp = sqlite_ann.read(p)  # type: ignore[misc]
    sqlite_ann.write(p, a, {**{k: v for k, v in stamp.items() if k in ("store_id", "generation", "dim")},
                            "token": "0" * 32})


@pytest.mark.parametrize("damage", [Path.unlink, _truncate, _foreign, _flip_ids, _scramble_vectors, _bad_stamp])
def test_a_missing_or_damaged_file_is_rebuilt_never_trusted(path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            damage: Any) -> None:
    first = _open(path)
    want = _answers(first)
    damage(first.ann_path)
    built = _count_builds(monkeypatch)
    again = _open(path)
    assert _answers(again) == want and built == [1]
    assert sqlite_ann.read(again.ann_path) is not None  # a good file again


def _flat_ivf(dim: int, nlist: int) -> Any:
    import faiss

    return faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist, faiss.METRIC_INNER_PRODUCT)


def _float32_file(s: SQLiteStore, trailer: tuple[bytes, str]) -> None:
    """`s`'s rows in a float32 `IndexIVFFlat` (the index kind before the 8-bit codes) at the
    file's state, its stamp otherwise good, ending with `trailer` (magic, layout)."""
    import faiss

    a, stamp = sqlite_ann.read(s.ann_path)  # type: ignore[misc]
    m = s._search_index()
    flat = AnnIndex.build(m.mat, m.rowids, a.seq, a.nlist, make=_flat_ivf)
    magic, layout = trailer
    tmp = s.ann_path.with_name(s.ann_path.name + ".tmp")
    faiss.write_index(flat.index, str(tmp))
    size = tmp.stat().st_size
    keep = {k: v for k, v in stamp.items() if k in ("store_id", "generation", "token", "dim")}
    head = json.dumps({**keep, "layout": layout, "index_bytes": size, "seq": flat.seq, "trained_rows": flat.rows,
                       "rows": flat.rows}, separators=(",", ":")).encode()
    with open(tmp, "ab") as f:
        f.write(head + len(head).to_bytes(8, "little") + magic)
    tmp.replace(s.ann_path)


@pytest.mark.parametrize("trailer", [(b"DKTANN01", "sqlite-ann-1"), (sqlite_ann.MAGIC, sqlite_ann.LAYOUT)],
                         ids=["file-before-the-bump", "float32-lists-in-a-new-trailer"])
def test_a_float32_ivf_file_is_rebuilt_with_8_bit_codes(path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       trailer: tuple[bytes, str]) -> None:
    """A file of the float32 `IndexIVFFlat` (written before the file format moved to 8-bit codes,
    or one claiming the new layout) is not read: it is rebuilt, and the new file holds codes."""
    first = _open(path)
    want = _answers(first)
    _float32_file(first, trailer)
    assert sqlite_ann.read(first.ann_path) is None
    built = _count_builds(monkeypatch)
    again = _open(path)
    assert _answers(again) == want and built == [1]
    got = sqlite_ann.read(again.ann_path)
    assert got is not None and sqlite_ann.is_ours(got[0].index)
    assert got[1]["layout"] == "sqlite-ann-2" and again.ann_path.read_bytes()[-8:] == b"DKTANN02"


def test_a_file_from_another_store_at_the_same_path_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    _seed(a)
    _answers(_open(a))
    _seed(b, docs=61)
    b_store = _open(b)
    want = _exact_answers(b_store)
    shutil.copy(a.with_name("a.db.ann"), b_store.ann_path)
    built = _count_builds(monkeypatch)
    assert _answers(b_store) == want and built == [1]


def test_an_unwritable_place_only_means_no_file(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sqlite_ann, "write", full_disk)
    s = _open(path)
    assert _answers(s) == _exact_answers(s) and not s.ann_path.exists()


def test_ann_file_follows_the_store_file_mode(tmp_path: Path) -> None:
    p = tmp_path / "m.db"
    s = SQLiteStore(p, file_mode=0o640)
    s.set_meta({"embedder": EMB.name, "dim": str(EMB.dim)})
    s.write_version(version("x", 1, ["refund window", "salary bands"]))
    s.ann = THOROUGH
    s.search_dense(qvec("refund"), 1, Filters())
    assert s.ann_path.stat().st_mode & 0o777 == 0o640


def test_docket_ask_exact_searches_exactly_and_answers_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from docket.cli import _register, app

    _register()
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(12):
        (docs / f"p{i}.txt").write_text(f"Refund rule {i}: annual plans refund within {i + 10} days.\n\n"
                                        f"Salary band {i} is reviewed every year.\n")
    db = str(tmp_path / "s.db")
    runner = CliRunner()
    assert runner.invoke(app, ["index", str(docs), "--db", db, "--embedder", "hash"]).exit_code == 0
    monkeypatch.setattr(AnnSettings, "from_env", classmethod(lambda cls: APPROXIMATE))
    seen: list[str] = []
    real = SQLiteStore.search_dense

    def spy(self: SQLiteStore, *args: Any) -> Any:
        out = real(self, *args)
        seen.append(self.last_dense)
        return out

    monkeypatch.setattr(SQLiteStore, "search_dense", spy)
    outs, modes = [], []
    for extra in ([], ["--exact"]):
        seen.clear()
        r = runner.invoke(app, ["ask", "annual plans refund", "--db", db, "--floor", "0", "--json", *extra])
        assert r.exit_code == 0, r.output
        outs.append(r.output)
        modes.append(seen[-1])  # the question's search (a session warms up with one of its own first)
    assert modes == ["approximate", "exact"]
    assert outs[0] == outs[1]  # 24 rows, one list: the index finds what exact search finds


def test_a_store_of_many_copies_of_one_chunk_trusts_its_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Twelve identical chunks crowd a row out of its own ten nearest: the file's self-check
    accepts rows scoring as high as the row itself (issue 22: a 100k bench store rebuilt its
    index in every new process)."""
    path = tmp_path / "copies.db"
    s = _open(path)
    for d in range(12):
        s.write_version(version(f"copy{d}", 1, ["the same boilerplate paragraph"] * 3))
    for d in range(20):
        s.write_version(version(f"d{d}", 1, _texts(d, 3)))
    want = _answers(s)
    built = _count_builds(monkeypatch)
    again = _open(path)
    assert _answers(again) == want and not built
