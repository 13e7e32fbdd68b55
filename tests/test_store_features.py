"""Per-chunk features persisted in the stores (schema 3), both backends: written at index time,
read back instead of recomputed, ignored when stale, and a store written by schema 2 migrates
(its rows get their features) and assembles exactly as before."""

from __future__ import annotations

import json
import sqlite3
from datetime import date

import numpy as np
import pytest
from conftest_pg import pg_server, pg_url  # noqa: F401
from store_cases import EMB, version

from docket.assemble import assemble
from docket.brief.sizer import feature_record
from docket.features import RECORD_VERSION, FeatureCache, content_key, default_cache, digest, from_record
from docket.model import Candidate
from docket.store.base import MemoryStore
from docket.store.factory import open_store

from helpers import newest_schema as newest

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
TEXTS = ["Annual plans can be refunded within 30 days of purchase.",
         "Monthly plans are not refundable. They can be cancelled at any time.",
         "Refunds go back to the original payment method within 10 business days."]
QUESTION = "Can I get a refund on my annual plan?"


@pytest.fixture(params=BACKENDS)
def location(request: pytest.FixtureRequest, tmp_path) -> str:  # noqa: ANN001
    return str(tmp_path / "f.db") if request.param == "sqlite" else request.getfixturevalue("pg_url")


def _fill(loc: str) -> None:
    s = open_store(loc)
    s.set_meta({"embedder": EMB.name, "dim": str(EMB.dim)})
    s.write_version(version("policy", 1, TEXTS, source_type="policy"))
    s.write_version(version("help", 1, TEXTS[:1] + ["Annual plans can be refunded within 14 days."], source_type="help"))
    s.close()


def _as_schema_2(loc: str) -> None:
    """Turn a store into what schema 2 wrote: schema 3 only added the chunk_features table."""
    if loc.startswith("postgres"):
        import psycopg

        with psycopg.connect(loc, autocommit=True) as conn:
            conn.execute("DROP TABLE chunk_features")
            conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema'")
        return
    conn = sqlite3.connect(loc, isolation_level=None)
    conn.execute("DROP TABLE chunk_features")
    conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema'")
    conn.close()


_RECORDS = "SELECT f.features FROM chunks c LEFT JOIN chunk_features f ON f.chunk = c.rowid ORDER BY c.id"


def _records(loc: str) -> list[str | None]:
    if loc.startswith("postgres"):
        import psycopg

        with psycopg.connect(loc, autocommit=True) as conn:
            return [r[0] for r in conn.execute(_RECORDS)]
    conn = sqlite3.connect(loc)
    try:
        return [r[0] for r in conn.execute(_RECORDS)]
    finally:
        conn.close()


def _brief(chunks: list, store: object) -> dict:
    ranked = [Candidate(c, 1.0 - 0.1 * i, i + 1) for i, c in enumerate(chunks)]
    return assemble(QUESTION, ranked, store=store, embedder=EMB, budget=300, floor=0.0).to_json()  # type: ignore[arg-type]


def test_features_are_written_at_index_time_and_read_back(location: str) -> None:
    _fill(location)
    records = _records(location)
    assert len(records) == 5 and all(records)
    assert all(json.loads(r)["v"] == RECORD_VERSION for r in records)  # type: ignore[arg-type]
    default_cache().clear()
    s = open_store(location)
    chunks = sorted(s.chunks_of("policy", 1) + s.chunks_of("help", 1), key=lambda c: c.id)
    cache = default_cache()
    before = (cache.loaded, cache.computed)
    with_store = _brief(chunks, s)
    assert cache.loaded - before[0] == 5 and cache.computed == before[1]  # read, not recomputed
    default_cache().clear()
    fresh = [c.model_copy() for c in chunks]  # the same content, features computed from scratch
    assert _brief(fresh, MemoryStore(fresh)) == with_store
    s.close()


def test_a_schema_2_store_opens_migrated_and_assembles_as_before(location: str) -> None:
    _fill(location)
    s = open_store(location)
    chunks = sorted(s.chunks_of("policy", 1) + s.chunks_of("help", 1), key=lambda c: c.id)
    expected = _brief(chunks, s)
    s.close()
    _as_schema_2(location)
    old = open_store(location)  # a store written by the previous schema
    assert old.meta()["schema"] == newest(old)
    assert all(_records(location))  # migrated rows got their features
    default_cache().clear()
    loaded = default_cache().loaded
    again = sorted(old.chunks_of("policy", 1) + old.chunks_of("help", 1), key=lambda c: c.id)
    assert _brief(again, old) == expected
    assert default_cache().loaded - loaded == 5
    old.write_version(version("faq", 1, ["Refunds take 10 days."]))  # and takes writes
    assert len(_records(location)) == 6 and all(_records(location))
    old.close()
    assert open_store(location).meta()["schema"] == newest(open_store(location))  # a second open does not migrate again


def test_stale_or_unreadable_records_are_recomputed_not_trusted() -> None:
    c = version("d", 1, TEXTS).chunks[1]
    record = feature_record(c)
    assert from_record(c, content_key(c), record) is not None
    moved = c.model_copy(update={"status": "superseded"})  # the row changed after it was written
    assert from_record(moved, content_key(moved), record) is None
    bad = json.loads(record)
    bad["v"] = 99
    assert from_record(c, content_key(c), json.dumps(bad)) is None
    assert from_record(c, content_key(c), "{not json") is None
    assert from_record(c, content_key(c), json.dumps({"v": 1, "key": digest(content_key(c))})) is None
    cache = FeatureCache()
    cache.offer(moved, record)
    f = cache.features(moved)
    assert cache.loaded == 0 and cache.computed == 1
    assert f.statements(moved) == from_record(c, content_key(c), record).statements(c)  # type: ignore[union-attr]


def test_a_record_holds_what_the_moves_compute() -> None:
    for c in version("d", 1, TEXTS).chunks:
        got = from_record(c, content_key(c), feature_record(c))
        assert got is not None
        fresh = FeatureCache().features(c)
        assert got.rescore_terms(c) == fresh.rescore_terms(c)
        assert got.copy_hash(c) == fresh.copy_hash(c)
        assert got._claims_record is not None  # persisted, decoded only when a pair needs them
        assert got.statements(c) == fresh.statements(c)
        assert got.costs  # both formats, labels S1-S999


def test_a_version_1_record_is_still_read_and_its_claims_computed_when_asked() -> None:
    """Stores written before claims were persisted keep their other features (no reindex)."""
    c = version("d", 1, TEXTS).chunks[1]
    old = json.loads(feature_record(c))
    old["v"] = 1
    del old["claims"]
    got = from_record(c, content_key(c), json.dumps(old))
    assert got is not None and got._claims_record is None and got.costs
    assert got.statements(c) == FeatureCache().features(c).statements(c)


def test_unreadable_claims_in_a_record_are_recomputed_not_trusted() -> None:
    c = version("d", 1, TEXTS).chunks[1]
    bad = json.loads(feature_record(c))
    bad["claims"] = [[], ["not", "a", "claim"]]
    got = from_record(c, content_key(c), json.dumps(bad))
    assert got is not None
    assert got.statements(c) == FeatureCache().features(c).statements(c)


def test_the_cache_keeps_few_chunk_objects_alive() -> None:
    """Chunk objects hold their vectors (~13.5 KiB at 384 dimensions): a long-running process
    that fetches many chunks must not keep 100k of them alive; features (no vectors) stay."""
    from docket.features import OBJECT_CAPACITY, OFFERED_CAPACITY

    cache = FeatureCache()
    chunks = [version(f"d{i}", 1, [f"Text number {i}."]).chunks[0] for i in range(OBJECT_CAPACITY + 5000)]
    for c in chunks:
        cache.offer(c, feature_record(c) if len(cache._offered) < 10 else "{}")
        cache.features(c)
    assert len(cache._objects) <= OBJECT_CAPACITY and len(cache._offered) <= OFFERED_CAPACITY
    assert len(cache._content) == len(chunks)  # the features themselves are all kept
    again = chunks[0].model_copy()  # its object was let go; its features are found by content
    computed = cache.computed
    cache.features(again)
    assert cache.computed == computed


def test_claims_with_offsets_outside_the_text_are_recomputed() -> None:
    c = version("d", 1, TEXTS).chunks[1]
    bad = json.loads(feature_record(c))
    assert bad["claims"][1:]
    bad["claims"][1][0], bad["claims"][1][1] = 5, 10_000  # a sentence past the end of the text
    got = from_record(c, content_key(c), json.dumps(bad))
    assert got is not None and got.statements(c) == FeatureCache().features(c).statements(c)


def test_a_record_whose_claims_cannot_be_written_keeps_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    from docket import claims as claims_mod

    def refuse(text: str, found: list) -> list:
        raise ValueError("claim text is not in the passage")

    monkeypatch.setattr(claims_mod, "to_record", refuse)
    c = version("d", 1, TEXTS).chunks[1]
    rec = json.loads(feature_record(c))
    assert rec["claims"] is None and rec["costs"]  # indexing goes on; claims are computed when asked
    got = from_record(c, content_key(c), json.dumps(rec))
    assert got is not None and got.statements(c) == FeatureCache().features(c).statements(c)


def test_a_fetched_chunk_reads_the_stores_float32_vector_with_the_norm_of_its_tuple(location: str) -> None:
    """The store offers the array it built each chunk's vector tuple from; the entry uses it (no
    conversion of the tuple back) and its vector and norm are the ones the tuple gives."""
    _fill(location)
    default_cache().clear()
    s = open_store(location)
    chunks = list(s.get_many([c.id for c in s.chunks_of("policy", 1)]).values())
    assert chunks
    for c in chunks:
        e = default_cache().entry(c)
        assert e.vector is not None and e.vector.dtype == np.float32
        assert e.vector.tobytes() == np.asarray(c.vector, dtype=np.float32).tobytes()
        assert e.norm == float(np.linalg.norm(np.asarray(c.vector, dtype=np.float64)))
        assert e.vector is default_cache()._offered.get(id(c))[2]  # the offered array, not a new one
    s.close()


@pytest.mark.parametrize("offered", [np.zeros(5, np.float32), np.zeros(3, np.float64), np.zeros((1, 3), np.float32)])
def test_an_offered_vector_of_another_shape_or_type_is_not_used(offered: np.ndarray) -> None:
    from docket.model import parse_chunk

    v = [0.6, 0.0, 0.8000000000000002]  # not a float32 value: the norm comes from the tuple's float64s
    c = parse_chunk({"id": "a", "doc": "d", "text": "Annual plans can be refunded.", "vector": v})
    cache = FeatureCache()
    cache.offer(c, None, offered)
    e = cache.entry(c)
    assert e.vector is not offered and e.vector.tolist() == np.asarray(v, dtype=np.float32).tolist()
    assert e.norm == float(np.linalg.norm(np.asarray(v, dtype=np.float64)))


@pytest.mark.postgres
def test_postgres_fetches_in_binary_give_the_chunks_of_the_text_protocol(pg_url: str) -> None:  # noqa: F811
    """get_many and chunks_of read rows in PostgreSQL's binary format (a vector in one
    frombuffer); every field of every chunk, the vector bit for bit, is what the text format gives."""
    import docket.store.postgres as pg

    _fill(pg_url)
    s = open_store(pg_url)
    dv = version("dated", 2, ["Säntis: 2,502 m, «quoted» — 40 EUR a day."], source_type="wiki",
                 acl=("group:finance",), when=date(2024, 3, 1))
    dv.chunks = [dv.chunks[0].model_copy(update={"metadata": {"k": [1, "ü", 2.5], "none": None}})]
    s.write_version(dv)
    ids = [c.id for d, v in (("policy", 1), ("help", 1), ("dated", 2)) for c in s.chunks_of(d, v)]
    text_rows = s._conn.execute(f"SELECT {pg._COLS} FROM {pg._FROM} WHERE c.id = ANY(%s)", (ids,)).fetchall()
    by_text = {r["id"]: pg.chunk_from_row(r, pg._vec(r["vector"])) for r in text_rows}
    fetched = s.get_many(ids)
    assert set(fetched) == set(by_text) == set(ids)
    assert fetched[dv.chunks[0].id].metadata == {"k": [1, "ü", 2.5], "none": None}
    assert fetched[dv.chunks[0].id].date == date(2024, 3, 1) and fetched[dv.chunks[0].id].acl
    for i in ids:
        a, b = fetched[i], by_text[i]
        assert a.model_dump() == b.model_dump()
        assert np.asarray(a.vector, np.float32).tobytes() == np.asarray(b.vector, np.float32).tobytes()
    assert [c.model_dump() for c in s.chunks_of("dated", 2)] == [by_text[c.id].model_dump() for c in s.chunks_of("dated", 2)]
    s.close()


def test_retrieve_scores_candidates_with_the_stores_array_as_with_the_tuple(location: str) -> None:
    """retrieve's candidate score is the cosine of the chunk's vector with the question's; read
    from the array the store offered, it is the float the tuple gives."""
    from docket.retrieve import retrieve

    _fill(location)
    default_cache().clear()
    s = open_store(location)
    got = retrieve(s, QUESTION, k=5, embedder=EMB)
    assert got
    q = EMB.embed([QUESTION])[0]
    for c in got:
        assert c.score == round(float(np.asarray(c.chunk.vector, dtype=np.float32) @ q), 6)
        assert default_cache().vector_of(c.chunk) is default_cache()._offered.get(id(c.chunk))[2]
    s.close()


def test_vector_of_a_chunk_nobody_offered_is_its_tuple_as_float32() -> None:
    from docket.model import parse_chunk

    c = parse_chunk({"id": "a", "doc": "d", "text": "Annual plans can be refunded.", "vector": [0.6, 0.0, 0.8]})
    cache = FeatureCache()
    v = cache.vector_of(c)
    assert v is not None and v.dtype == np.float32 and v.tolist() == np.asarray([0.6, 0.0, 0.8], np.float32).tolist()
    assert cache.vector_of(parse_chunk({"id": "b", "doc": "d", "text": "No vector."})) is None
    cache.offer(c, None, np.zeros(5, np.float32))  # wrong shape: not used
    assert cache.vector_of(c).tolist() == v.tolist()  # type: ignore[union-attr]
