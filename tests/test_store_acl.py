"""Access control in the stores, both backends: users and groups apart inside the searches, BM25
statistics that never count what the asker may not read, search and fetch in one snapshot, plain
acl entries resolved by the principals table, migration of a schema-1 store, and the PostgreSQL
races (two first writers on the DDL, two documents claiming one chunk id)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from acl_cases import APPROXIMATE
from conftest_pg import pg_server, pg_url  # noqa: F401
from store_cases import EMB, qvec, version
from store_v1 import write_pg_v1, write_sqlite_v1

from docket.api import Session
from docket.errors import InputError
from docket.ingest import IndexOptions, index_versions
from docket.retrieve import retrieve
from docket.store.factory import open_store
from docket.store.protocol import Filters, Principal, ScopedView, Store
from docket.store.sqlite_ann import AnnSettings

from helpers import newest_schema as newest

#: "sqlite-ann": SQLite with every dense search through the approximate index (issue 22)
BACKENDS = ["sqlite", "sqlite-ann", pytest.param("postgres", marks=pytest.mark.postgres)]


def _sqlite(request: pytest.FixtureRequest) -> bool:
    """Whether the backend is SQLite; for "sqlite-ann", dense search is made approximate for the test."""
    if request.param == "sqlite-ann":
        request.getfixturevalue("monkeypatch").setattr(AnnSettings, "from_env", classmethod(lambda cls: APPROXIMATE))
    return str(request.param).startswith("sqlite")


def _location(request: pytest.FixtureRequest, tmp_path, name: str = "s.db") -> str:  # noqa: ANN001
    return str(tmp_path / name) if _sqlite(request) else request.getfixturevalue("pg_url")


@pytest.fixture(params=BACKENDS)
def location(request: pytest.FixtureRequest, tmp_path) -> str:  # noqa: ANN001
    return _location(request, tmp_path)


@pytest.fixture()
def store(location: str) -> Iterator[Store]:
    s = open_store(location)
    s.set_meta({"embedder": EMB.name, "dim": str(EMB.dim)})
    yield s
    s.close()


def _ids(store: Store, f: Filters, q: str = "salary bands") -> tuple[set[str], set[str]]:
    return ({c for c, _ in store.search_dense(qvec(q), 50, f)}, {c for c, _ in store.search_bm25(q, 50, f)})


def test_a_user_named_like_a_group_reads_nothing_of_the_group(store: Store) -> None:
    store.write_version(version("pub", 1, ["salary bands are published yearly"]))
    store.write_version(version("hr", 1, ["salary bands for finance staff"], acl=("finance",)))
    store.write_version(version("typed", 1, ["salary bands typed group"], acl=("group:finance",)))
    store.write_version(version("mine", 1, ["salary bands of the user finance"], acl=("user:finance",)))
    member = Principal("ann", frozenset({"finance"}))
    impostor = Principal("finance")
    assert _ids(store, Filters(principal=member)) == ({"pub-v1-0", "hr-v1-0", "typed-v1-0"},) * 2
    assert _ids(store, Filters(principal=impostor)) == ({"pub-v1-0", "mine-v1-0"},) * 2
    assert ScopedView(store, impostor).get("hr-v1-0") is None
    assert store.get("hr-v1-0").acl == ("group:finance",)  # type: ignore[union-attr]  # stored typed


def test_plain_entries_naming_a_registered_user_stay_that_users(store: Store) -> None:
    store.set_principal("carol", [])
    store.set_principal("dave", ["finance"])
    result = store.write_version(version("mix", 1, ["salary bands mixed"], acl=("carol", "finance", "ops")))
    assert result.acl.to_json() == {"as_user": ["carol"], "as_group": ["finance", "ops"], "ambiguous": []}
    assert store.get("mix-v1-0").acl == ("group:finance", "group:ops", "user:carol")  # type: ignore[union-attr]
    assert _ids(store, Filters(principal=store.principal("carol"))) == ({"mix-v1-0"},) * 2
    assert _ids(store, Filters(principal=Principal("ops"))) == (set(), set())


def test_index_report_says_how_plain_entries_were_read(store: Store) -> None:
    store.set_principal("carol", [])
    report = index_versions(store, [version("d", 1, ["text"], acl=("carol", "staff"))], IndexOptions(embedder=EMB))
    assert report.to_json()["acl"] == {"as_user": ["carol"], "as_group": ["staff"], "ambiguous": []}


def _ranking(store: Store, q: str, f: Filters) -> list[tuple[str, float]]:
    return [(c, round(s, 9)) for c, s in store.search_bm25(q, 50, f)]


PUBLIC = ["refund policy for annual plans", "annual plans renew each year", "refund requests go to billing",
          "the office is in Lisbon", "monthly plans can be cancelled any time"]
SECRET = ["refund refund annual merger secret", "annual refund bonus for executives", "merger refund annual plan"]


@pytest.fixture(params=BACKENDS)
def fresh(request: pytest.FixtureRequest, tmp_path):  # noqa: ANN001, ANN201
    """A factory of new empty store locations of one backend."""
    count = iter(range(100))
    if _sqlite(request):
        return lambda: str(tmp_path / f"f{next(count)}.db")
    import psycopg

    base = request.getfixturevalue("pg_server")

    def make() -> str:
        name = f"fresh_{id(tmp_path)}_{next(count)}"
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {name}")
        return f"{base}{'&' if '?' in base else '?'}options=-csearch_path%3D{name}%2Cpublic"

    return make


def test_anonymous_bm25_ranking_ignores_restricted_rows(fresh) -> None:  # noqa: ANN001
    """The same public rows with and without restricted documents that contain the query's words:
    identical ids, order and scores for the anonymous asker (and for a user outside the group)."""
    rankings = []
    for with_secret in (False, True):
        s = open_store(fresh())
        s.set_meta({"embedder": EMB.name, "dim": str(EMB.dim)})
        s.write_version(version("pub", 1, PUBLIC))
        if with_secret:
            s.write_version(version("sec", 1, SECRET, acl=("group:execs",)))
            s.write_version(version("own", 1, SECRET[:1], acl=("user:ceo",)))
        rankings.append([(_ranking(s, q, Filters()), _ranking(s, q, Filters(principal=Principal("bob"))))
                         for q in ("annual refund", "merger", "refund plans Lisbon", "annual")])
        s.close()
    assert rankings[0] == rankings[1]
    assert rankings[0][0][0]  # the public rows do match


def test_bm25_statistics_per_principal_on_both_backends(store: Store) -> None:
    store.write_version(version("pub", 1, PUBLIC))
    anon = _ranking(store, "annual refund", Filters())
    store.write_version(version("sec", 1, SECRET, acl=("group:execs",)))
    store.write_version(version("ops", 1, ["annual refund annual refund ops"], acl=("group:ops",)))
    assert _ranking(store, "annual refund", Filters()) == anon
    exec_view = _ranking(store, "annual refund", Filters(principal=Principal("e", frozenset({"execs"}))))
    assert {c for c, _ in exec_view} >= {"sec-v1-0", "sec-v1-1"} and "ops-v1-0" not in {c for c, _ in exec_view}
    # the ops group's document changes nothing for an exec: remove it and compare
    store.delete("ops")
    assert _ranking(store, "annual refund", Filters(principal=Principal("e", frozenset({"execs"})))) == exec_view


def test_search_and_fetch_read_one_snapshot(location: str) -> None:
    reader, writer = open_store(location), open_store(location)
    reader.set_meta({"embedder": EMB.name, "dim": str(EMB.dim)})
    writer.write_version(version("x", 1, ["quarterly salary bands"]))
    with reader.snapshot():
        hits = reader.search_dense(qvec("salary bands"), 5, Filters())
        writer.write_version(version("x", 1, ["quarterly salary bands"], acl=("group:hr",)))  # committed meanwhile
        assert [c for c, _ in hits] == ["x-v1-0"]
        assert reader.get_many(["x-v1-0"])["x-v1-0"].acl is None  # the fetch sees the searched state
        assert reader.search_bm25("salary", 5, Filters()) != []
    assert reader.search_dense(qvec("salary bands"), 5, Filters()) == []  # the next block sees the change
    reader.close()
    writer.close()


def test_ask_during_acl_changes_never_fails_or_leaks(location: str) -> None:
    setup = open_store(location)
    setup.set_meta({"embedder": EMB.name, "dim": str(EMB.dim)})
    setup.write_version(version("x", 1, ["the refund window is thirty days", "refunds need a receipt"]))
    setup.close()
    stop = threading.Event()

    def flip() -> None:
        w = open_store(location)
        i = 0
        while not stop.is_set():
            acl = ("group:hr",) if i % 2 == 0 else None
            w.write_version(version("x", 1, ["the refund window is thirty days", "refunds need a receipt"], acl=acl))
            i += 1
        w.close()

    t = threading.Thread(target=flip)
    t.start()
    r = open_store(location)
    try:
        for _ in range(15):
            res = Session(r, embedder=EMB).ask("refund window", floor=0.0, budget=500)
            cands, brief = res.candidates, res.brief
            out = str(brief.to_json())
            for c in cands:
                assert c.chunk.acl is None
            assert ("x-v1-0" in out) == any(c.chunk.id == "x-v1-0" for c in cands) or not cands
    finally:
        stop.set()
        t.join()
        r.close()


def test_ask_refuses_unrestricted_filters(store: Store) -> None:
    store.write_version(version("x", 1, ["text"]))
    with pytest.raises(InputError, match="administration"):
        Session(store, embedder=EMB).ask("text", filters=Filters(unrestricted=True))
    assert retrieve(store, "text", filters=Filters(unrestricted=True), embedder=EMB)  # admin search still works


# --- migration of a schema-1 store ------------------------------------------------------------


@pytest.fixture(params=BACKENDS)
def v1_location(request: pytest.FixtureRequest, tmp_path) -> str:  # noqa: ANN001
    loc = _location(request, tmp_path, "v1.db")
    (write_sqlite_v1 if _sqlite(request) else write_pg_v1)(loc)
    return loc


def test_a_schema_1_store_opens_migrated(v1_location: str) -> None:
    s = open_store(v1_location)
    assert s.meta()["schema"] == newest(s)  # 1 -> 2 (typed acls, own postings) -> 3 (chunk features) -> 4 (chunk contexts)
    assert s.get("hr-0").acl == ("group:finance",)  # type: ignore[union-attr]
    assert s.get("ceo-0").acl == ("user:carol",)  # type: ignore[union-attr]  # carol: a registered user
    assert s.get("both-0").acl == ("group:finance", "user:carol")  # type: ignore[union-attr]
    import json

    assert json.loads(s.meta()["acl_migration"]) == {"as_user": ["carol"], "as_group": ["finance"], "ambiguous": []}
    f = Filters(principal=s.principal("carol"))
    assert {c for c, _ in s.search_bm25("holiday", 10, f)} == {"pub-0", "ceo-0", "both-0"}
    assert {c for c, _ in s.search_bm25("holiday", 10, Filters(principal=s.principal("dave")))} == {"pub-0", "hr-0", "both-0"}
    assert {c for c, _ in s.search_bm25("holiday", 10, Filters(principal=Principal("finance")))} == {"pub-0"}
    assert [c for c, _ in s.search_bm25("payout", 10, Filters(principal=s.principal("dave")))] == ["hr-0"]
    assert s.search_dense(qvec("holiday rules for everyone"), 1, Filters())[0][0] == "pub-0"
    s.write_version(version("new", 1, ["holiday news"]))  # the migrated store takes writes
    assert {c for c, _ in s.search_bm25("holiday", 10, Filters())} == {"pub-0", "new-v1-0"}
    s.close()
    again = open_store(v1_location)  # a second open does not migrate twice
    assert again.meta()["schema"] == newest(again) and again.count() == 5
    again.close()


def test_a_store_from_a_newer_docket_is_refused(tmp_path) -> None:  # noqa: ANN001
    s = open_store(str(tmp_path / "n.db"))
    s.set_meta({"schema": "99"})
    s.close()
    with pytest.raises(InputError, match="newer docket"):
        open_store(str(tmp_path / "n.db"))


# --- PostgreSQL races ------------------------------------------------------------------------


@pytest.mark.postgres
def test_two_first_writers_into_an_empty_store_both_land(pg_server: str) -> None:  # noqa: F811
    import psycopg

    for run in range(4):
        schema = f"race_ddl_{run}"
        with psycopg.connect(pg_server, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        url = f"{pg_server}{'&' if '?' in pg_server else '?'}options=-csearch_path%3D{schema}%2Cpublic"
        errors: list[BaseException] = []
        barrier = threading.Barrier(3)

        def writer(w: int, url: str = url, barrier: threading.Barrier = barrier, errors: list = errors) -> None:  # type: ignore[type-arg]
            try:
                barrier.wait()
                s = open_store(url)
                report = index_versions(s, [version(f"w{w}-d{i}", 1, [f"writer {w} doc {i}"]) for i in range(5)],
                                        IndexOptions(embedder=EMB))
                assert report.problems == [] and report.chunks_written == 5
                s.close()
            except BaseException as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        s = open_store(url)
        assert s.count() == 15
        s.close()


@pytest.mark.postgres
def test_two_documents_claiming_one_chunk_id_at_once_is_a_reported_problem(pg_url: str) -> None:  # noqa: F811
    import psycopg

    s = open_store(pg_url)
    s.set_meta({"embedder": EMB.name, "dim": str(EMB.dim)})
    other = psycopg.connect(pg_url)  # another writer, mid-transaction, holding the id
    other.execute("INSERT INTO chunks(id, doc, version, status, public, text, tokens, vector) "
                  "VALUES ('same-0', 'a', 1, 'current', true, 'one', 1, %s::vector)", (str([float(x) for x in qvec("one")]),))
    other.execute("INSERT INTO versions VALUES ('a', 1, 'current', NULL, NULL, 'a', 'x', 'h', 1, NULL)")
    out: list[object] = []
    t = threading.Thread(target=lambda: out.append(_try(s, version("b", 1, ["two"], prefix="same"))), daemon=True)
    t.start()
    with psycopg.connect(pg_url, autocommit=True) as watch:  # until the write waits on the uncommitted id
        blocked = "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid)))"
        end = time.monotonic() + 30
        while not watch.execute(blocked, (other.info.backend_pid,)).fetchone()[0]:
            assert time.monotonic() < end, "the write never waited for the other transaction's id"
            time.sleep(0.005)
    other.commit()
    other.close()
    t.join(30)
    (err,) = out
    assert isinstance(err, InputError) and "already belongs to document 'a'" in str(err)
    report = index_versions(s, [version("c", 1, ["three"], prefix="same")], IndexOptions(embedder=EMB))
    assert len(report.problems) == 1 and "'same-0' already belongs" in report.problems[0][1]
    assert s.documents() == ["a"]
    s.close()


def _try(s: Store, dv: object) -> object:
    try:
        return s.write_version(dv)  # type: ignore[arg-type]
    except Exception as e:  # noqa: BLE001
        return e
