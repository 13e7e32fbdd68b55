"""One behaviour suite, two backends: SQLite (embedded default) and PostgreSQL + pgvector."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

import pytest
from conftest_pg import pg_server, pg_url  # noqa: F401
from store_cases import EMB, qvec, version

from docket.errors import InputError
from docket.store.base import version_in_force
from docket.store.factory import open_store
from docket.store.protocol import Filters, Principal, ScopedView, Store


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path) -> Iterator[Store]:
    location = str(tmp_path / "s.db") if request.param == "sqlite" else request.getfixturevalue("pg_url")
    s = open_store(location)
    s.set_meta({"embedder": EMB.name, "dim": str(EMB.dim)})
    yield s
    s.close()


ALICE = Principal("alice", frozenset({"finance"}))
BOB = Principal("bob")


def test_write_and_look_up(store: Store) -> None:
    result = store.write_version(version("pol", 1, ["alpha one", "beta two", "gamma three"], when=date(2024, 1, 1)))
    assert result.status == "current" and result.superseded == []
    assert store.count() == 3
    c = store.get("pol-v1-1")
    assert c is not None and c.text == "beta two" and c.doc == "pol" and c.position == 1
    assert c.date == date(2024, 1, 1) and c.vector is not None and len(c.vector) == EMB.dim
    assert [x.id for x in store.chunks_of("pol", 1)] == ["pol-v1-0", "pol-v1-1", "pol-v1-2"]
    assert store.get("nope") is None
    assert store.chunks_of("pol", 9) == []
    assert [v.version for v in store.versions("pol")] == [1]
    assert store.documents() == ["pol"]
    assert set(store.get_many(["pol-v1-0", "pol-v1-2", "missing"])) == {"pol-v1-0", "pol-v1-2"}


def test_new_current_version_supersedes_older(store: Store) -> None:
    store.write_version(version("pol", 1, ["refund in 30 days"], when=date(2023, 1, 1)))
    result = store.write_version(version("pol", 2, ["refund in 14 days"], when=date(2025, 1, 1)))
    assert result.superseded == [1]  # reported; the stored status is the one v1 was given
    vs = store.versions("pol")
    assert [(v.version, v.status) for v in vs] == [(1, "current"), (2, "current")]
    assert store.get("pol-v1-0").status == "current"  # type: ignore[union-attr]
    assert version_in_force(vs).version == 2  # type: ignore[union-attr]
    assert version_in_force(vs, date(2025, 1, 1)).version == 2  # type: ignore[union-attr]
    assert version_in_force(vs, date(2024, 6, 1)).version == 1  # type: ignore[union-attr]


def test_supersedes_false_keeps_both_current(store: Store) -> None:
    store.write_version(version("pol", 1, ["a"]))
    result = store.write_version(version("pol", 2, ["b"], supersedes=False))
    assert result.superseded == []
    assert [v.status for v in store.versions("pol")] == ["current", "current"]


def test_lower_version_is_refused_and_store_unchanged(store: Store) -> None:
    store.write_version(version("pol", 3, ["v3 text"]))
    with pytest.raises(InputError, match="lower than stored version 3"):
        store.write_version(version("pol", 2, ["v2 text"]))
    assert [v.version for v in store.versions("pol")] == [3]
    # history may be back-filled when it says it is retired
    store.write_version(version("pol", 2, ["v2 text"], status="superseded"))
    assert [(v.version, v.status) for v in store.versions("pol")] == [(2, "superseded"), (3, "current")]


def test_rewrite_same_version_replaces_all_its_chunks(store: Store) -> None:
    store.write_version(version("pol", 1, ["a", "b", "c"]))
    store.write_version(version("pol", 1, ["x", "y"]))
    assert [c.text for c in store.chunks_of("pol", 1)] == ["x", "y"]
    assert store.count() == 2
    assert store.search_bm25("c", 10, Filters()) == []


def test_chunk_id_of_another_document_is_refused(store: Store) -> None:
    store.write_version(version("a", 1, ["one"], prefix="same"))
    with pytest.raises(InputError, match="already belongs to document 'a'"):
        store.write_version(version("b", 1, ["two"], prefix="same"))
    assert store.documents() == ["a"]


def test_delete(store: Store) -> None:
    store.write_version(version("pol", 1, ["a"], status="superseded"))
    store.write_version(version("pol", 2, ["b"]))
    store.write_version(version("faq", 1, ["c"]))
    assert store.delete("pol", 1) == 1
    assert [v.version for v in store.versions("pol")] == [2]
    assert store.delete("pol") == 1
    assert store.documents() == ["faq"]
    assert [cid for cid, _ in store.search_dense(qvec("b"), 5, Filters())] == ["faq-v1-0"]


def test_dense_and_bm25_rank_the_matching_chunk_first(store: Store) -> None:
    store.write_version(version("kb", 1, ["annual plans are refundable within 14 days",
                                          "monthly plans renew every month", "the office is in Lisbon"]))
    dense = store.search_dense(qvec("annual plans refundable"), 2, Filters())
    assert dense[0][0] == "kb-v1-0" and len(dense) == 2 and dense[0][1] >= dense[1][1]
    assert -1.0 <= dense[1][1] <= dense[0][1] <= 1.0 + 1e-6
    bm25 = store.search_bm25('Where is the "office"? OR -NOT', 5, Filters())  # query syntax is just words
    assert [cid for cid, _ in bm25] == ["kb-v1-2"]
    assert store.search_bm25("the of and", 5, Filters()) == []


def test_metadata_filters(store: Store) -> None:
    store.write_version(version("pol", 1, ["refund rules for plans"], source_type="policy", when=date(2024, 1, 1)))
    store.write_version(version("forum", 1, ["refund rules for plans forum"], source_type="forum",
                                status="user-generated", when=date(2025, 6, 1)))
    store.write_version(version("faq", 1, ["refund rules for plans faq"], source_type="help"))
    q = qvec("refund rules for plans")

    def both(f: Filters) -> tuple[set[str], set[str]]:
        return ({c for c, _ in store.search_dense(q, 10, f)}, {c for c, _ in store.search_bm25("refund plans", 10, f)})

    assert both(Filters(docs=("pol",))) == ({"pol-v1-0"}, {"pol-v1-0"})
    assert both(Filters(source_types=("forum", "help"))) == ({"forum-v1-0", "faq-v1-0"},) * 2
    assert both(Filters(statuses=("user-generated",))) == ({"forum-v1-0"},) * 2
    assert both(Filters(date_from=date(2025, 1, 1))) == ({"forum-v1-0"},) * 2
    assert both(Filters(date_to=date(2024, 12, 31))) == ({"pol-v1-0"},) * 2
    assert both(Filters(docs=("unknown",))) == (set(), set())


def test_acl_applies_inside_both_searches(store: Store) -> None:
    store.write_version(version("public", 1, ["salary bands are published yearly"]))
    store.write_version(version("hr", 1, ["salary bands secret table for staff"], acl=("finance",)))
    store.write_version(version("ceo", 1, ["salary bands of the ceo"], acl=("user:carol",)))
    store.write_version(version("nobody", 1, ["salary bands nobody may read"], acl=()))
    q = qvec("salary bands")

    def seen(f: Filters) -> tuple[set[str], set[str]]:
        return ({c for c, _ in store.search_dense(q, 50, f)}, {c for c, _ in store.search_bm25("salary bands", 50, f)})

    assert seen(Filters()) == ({"public-v1-0"},) * 2  # anonymous: public only
    assert seen(Filters(principal=BOB)) == ({"public-v1-0"},) * 2
    assert seen(Filters(principal=ALICE)) == ({"public-v1-0", "hr-v1-0"},) * 2  # through her group
    assert seen(Filters(principal=Principal("carol"))) == ({"public-v1-0", "ceo-v1-0"},) * 2
    everything = {"public-v1-0", "hr-v1-0", "ceo-v1-0", "nobody-v1-0"}
    assert seen(Filters(unrestricted=True)) == (everything, everything)
    # a selective filter still fills k from what the principal may read
    assert len(store.search_dense(q, 2, Filters(principal=ALICE))) == 2


def test_acl_change_is_seen_after_rewrite(store: Store) -> None:
    store.write_version(version("hr", 1, ["salary bands"], acl=("finance",)))
    assert store.search_dense(qvec("salary"), 5, Filters(principal=BOB)) == []
    store.write_version(version("hr", 1, ["salary bands"], acl=("finance", "user:bob")))
    assert [c for c, _ in store.search_dense(qvec("salary"), 5, Filters(principal=BOB))] == ["hr-v1-0"]


def test_scoped_view_hides_forbidden_chunks_and_versions(store: Store) -> None:
    store.write_version(version("pol", 1, ["old public rule"]))
    store.write_version(version("pol", 2, ["a", "b", "c"], acl=("finance",)))
    view = ScopedView(store, BOB)
    assert view.get("pol-v2-1") is None
    assert view.chunks_of("pol", 2) == []
    assert [v.version for v in view.versions("pol")] == [1]
    alice = ScopedView(store, ALICE)
    assert alice.get("pol-v2-1") is not None
    assert [c.id for c in alice.chunks_of("pol", 2)] == ["pol-v2-0", "pol-v2-1", "pol-v2-2"]


def test_principals_table(store: Store) -> None:
    store.set_principal("dave", ["finance", "hr"])
    p = store.principal("dave", ["extra"])
    assert p.groups == {"finance", "hr", "extra"}
    assert store.principal("unknown").groups == frozenset()


def test_export_round_trip_between_backends(store: Store, tmp_path) -> None:
    store.write_version(version("pol", 1, ["a one"], when=date(2023, 1, 1)))
    store.write_version(version("pol", 2, ["b two", "c three"], acl=("finance",)))
    exported = list(store.export())
    # v2 is restricted to finance: it must not retire v1 for everybody else (resolved per reader at query time)
    assert [(dv.doc, dv.version, dv.status) for dv in exported] == [("pol", 1, "current"), ("pol", 2, "current")]
    target = open_store(str(tmp_path / "copy.db"))
    target.set_meta(store.meta() | {"generation": "0"})
    for dv in exported:
        target.write_version(dv)
    assert [(v.version, v.status) for v in target.versions("pol")] == [(1, "current"), (2, "current")]
    assert target.get("pol-v2-1").acl == ("group:finance",)  # type: ignore[union-attr]  # stored typed
    assert target.search_dense(qvec("c three"), 1, Filters(principal=ALICE))[0][0] == "pol-v2-1"
    target.close()


def test_empty_store_searches_return_nothing(store: Store) -> None:
    assert store.search_dense(qvec("x"), 5, Filters()) == []
    assert store.search_bm25("anything", 5, Filters()) == []
    assert store.count() == 0 and list(store.export()) == []


@pytest.mark.postgres
def test_postgres_bulk_load_builds_the_hnsw_index_at_the_end(pg_url: str) -> None:  # noqa: F811
    from docket.ingest import IndexOptions, index_versions

    s = open_store(pg_url)
    report = index_versions(s, [version(f"d{i}", 1, [f"text number {i}"]) for i in range(120)], IndexOptions(embedder=EMB))
    assert report.chunks_written == 120
    conn = s._conn  # type: ignore[attr-defined]
    assert conn.execute("SELECT to_regclass('chunks_hnsw') AS i").fetchone()["i"] is not None
    best = s.search_dense(qvec("text number 7"), 1, Filters())[0]
    assert best[1] == pytest.approx(1.0, abs=1e-5)  # the identical text (or a hash-embedder twin)
    s.close()


@pytest.mark.postgres
@pytest.mark.parametrize(("configured", "after"), [("64MB", "1GB"), ("2GB", "2GB")])
def test_postgres_bulk_load_raises_maintenance_work_mem_never_lowers_it(pg_url: str, configured: str,  # noqa: F811
                                                                       after: str) -> None:
    """The HNSW build at the end of a bulk load gets at least 1 GB; a server (or session)
    configured with more keeps it."""
    from docket.ingest import IndexOptions, index_versions

    s = open_store(pg_url)
    conn = s._conn  # type: ignore[attr-defined]
    conn.execute(f"SET maintenance_work_mem = '{configured}'")
    index_versions(s, [version(f"d{i}", 1, [f"text number {i}"]) for i in range(120)], IndexOptions(embedder=EMB))
    assert conn.execute("SELECT to_regclass('chunks_hnsw') AS i").fetchone()["i"] is not None
    assert conn.execute("SHOW maintenance_work_mem").fetchone()["maintenance_work_mem"] == after
    s.close()
