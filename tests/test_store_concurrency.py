"""Concurrent writers, both backends: several writers of different documents never deadlock, fail
or lose a version, and each lock hazard of the PostgreSQL write path is pinned by a test that
sets up its interleaving on purpose (another session holds the lock, the test waits until the
writer is blocked on it, then moves): no sleeps stand in for synchronisation.

The hazards: a second first writer re-running the schema DDL (its catalog lookup was stale, its
`CREATE INDEX IF NOT EXISTS` took SHARE locks on tables the first writer was filling); two
documents claiming the same chunk ids in opposite orders; writers taking the ACL classes'
statistics rows in different orders. `test_redteam_concurrency.py` runs the large races.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from concurrency_kit import escapes, race
from conftest_pg import pg_server, pg_url  # noqa: F401
from store_cases import EMB, version

from docket.embed import HashEmbedder
from docket.errors import InputError
from docket.ingest import IndexOptions, index_versions
from docket.ingest.pipeline import check_embedder
from docket.store.factory import open_store
from docket.store.postgres import acl_class
from docket.store.protocol import Filters

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
WAIT_S = 30.0  # the most any condition below is waited for (a hang fails instead of hanging)


@pytest.fixture(params=BACKENDS)
def location(request: pytest.FixtureRequest, tmp_path) -> str:  # noqa: ANN001
    return str(tmp_path / "race.db") if request.param == "sqlite" else request.getfixturevalue("pg_url")


def test_concurrent_writers_of_different_documents_all_land(location: str) -> None:
    """Four writers into an empty store: index, re-index (same version, new content), new
    versions, deletes, chunks of five ACL classes, and a race for shared chunk ids."""
    outcomes = race(location, "threads", writers=4, rounds=3, seed=1)
    assert escapes(location, outcomes) == []
    assert sum(o.retried for o in outcomes) == 0  # the lock order held; the retry was not needed


def test_two_first_runs_with_different_embedders_do_not_mix_vectors(location: str) -> None:
    """Both read an empty meta; the one that claims second learns the other's embedder and is
    refused, instead of overwriting it (vectors of two models in one store)."""
    first, second = open_store(location), open_store(location)
    stale = second.meta()  # read before the first run fixes the embedder
    check_embedder(first, EMB)
    second.meta = lambda: stale  # type: ignore[method-assign]  # the second run's earlier read
    with pytest.raises(InputError, match="was built with embedder 'hash-bow' \\(dim 64\\)"):
        check_embedder(second, HashEmbedder(32))
    check_embedder(second, EMB)  # the same embedder is simply accepted
    assert first.meta()["dim"] == "64"
    first.close()
    second.close()


# --- PostgreSQL: each hazard set up on purpose ----------------------------------------------------


def _with_options(url: str, **settings: str) -> str:
    """The URL with server settings for its sessions (e.g. lock_timeout)."""
    extra = "".join(f"-c{k}%3D{v}%20" for k, v in settings.items())
    return url.replace("options=-csearch_path", f"options={extra}-csearch_path", 1)


def _watcher(url: str) -> Any:
    import psycopg

    return psycopg.connect(url, autocommit=True)


def _blocked_by(watch: Any, pid: int) -> bool:
    """Whether some session waits for a lock that session `pid` holds (asked outside any transaction,
    so each call reads the live lock table)."""
    return bool(watch.execute("SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid)))",
                              (pid,)).fetchone()[0])


def _wait_until(cond: Callable[[], bool], what: str) -> None:
    end = time.monotonic() + WAIT_S
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"waited {WAIT_S:.0f} s for {what}")
        time.sleep(0.005)  # polling a condition, not standing in for one


def _in_thread(fn: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    out: list[object] = []

    def run() -> None:
        try:
            out.append(fn())
        except Exception as e:  # noqa: BLE001
            out.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out


@pytest.mark.postgres
def test_a_second_first_writer_does_not_rerun_the_ddl(pg_url: str) -> None:  # noqa: F811
    """The race of issue 9, step by step. B opens the empty store and starts its first write, which
    waits for docket's DDL lock (held here by `ddl`, standing in for writer A). A creates the
    tables, starts filling them (`busy` holds ROW EXCLUSIVE on chunks and chunk_terms) and lets the
    DDL lock go. B must now see the tables and write: had it trusted its session's name cache
    (`to_regclass` still said "no chunks table"), it would re-run the DDL, whose CREATE INDEX IF
    NOT EXISTS waits for SHARE locks on the tables A is filling: the deadlock seen on chunk_terms.
    B's sessions run with lock_timeout, so such a wait fails the test instead of hanging it."""
    import psycopg

    from docket.store import postgres

    b = open_store(_with_options(pg_url, lock_timeout="3s"))
    ddl = psycopg.connect(pg_url, autocommit=True)
    ddl.execute("SELECT pg_advisory_lock(%s)", (postgres._DDL_LOCK,))
    watch = _watcher(pg_url)
    t, out = _in_thread(lambda: index_versions(b, [version("from-b", 1, ["written while A is mid-way"])],
                                               IndexOptions(embedder=EMB)))
    _wait_until(lambda: _blocked_by(watch, ddl.info.backend_pid), "B to wait for the DDL lock")
    ddl.execute(postgres._CHUNKS_SCHEMA.format(dim=EMB.dim))  # writer A's DDL, committed
    ddl.execute(postgres._HNSW)
    busy = psycopg.connect(pg_url)
    busy.execute("LOCK TABLE chunks, chunk_terms IN ROW EXCLUSIVE MODE")  # A, mid-write
    ddl.execute("SELECT pg_advisory_unlock(%s)", (postgres._DDL_LOCK,))
    t.join(WAIT_S)
    busy.rollback()
    (report,) = out
    assert not isinstance(report, Exception), report
    assert report.problems == [] and report.chunks_written == 1  # type: ignore[attr-defined]
    assert b.count() == 1
    for conn in (busy, ddl, watch):
        conn.close()
    b.close()


@pytest.mark.postgres
def test_a_store_opened_empty_sees_what_another_process_indexes(pg_url: str) -> None:  # noqa: F811
    reader = open_store(pg_url)
    writer = open_store(pg_url)
    index_versions(writer, [version("later", 1, ["indexed after the reader opened"])], IndexOptions(embedder=EMB))
    assert reader.count() == 1
    assert [c for c, _ in reader.search_bm25("indexed reader", 5, Filters())] == ["later-v1-0"]
    writer.close()
    reader.close()


@pytest.mark.postgres
def test_two_documents_taking_the_same_ids_in_opposite_orders_clash_without_deadlock(pg_url: str) -> None:  # noqa: F811
    """`other` holds id-a (uncommitted); the store writes ids [id-b, id-a]; once it waits, `other`
    takes id-b. Inserted in the given order the store would hold id-b and wait for id-a: a
    deadlock. In id order it waits for id-a first holding nothing, so `other` goes on, commits,
    and the store reports the clash."""
    import psycopg

    s = open_store(pg_url)
    s.set_meta({"embedder": EMB.name, "dim": str(EMB.dim)})
    other = psycopg.connect(pg_url)
    vec = str([float(x) for x in EMB.embed(["x"])[0]])
    insert = ("INSERT INTO chunks(id, doc, version, status, public, text, tokens, vector) "
              "VALUES (%s, 'a', 1, 'current', true, 'x', 1, %s::vector)")
    other.execute("SET deadlock_timeout = '20s'")  # were there a cycle, the store would be the one to find it
    other.execute(insert, ("id-a", vec))
    dv = version("b", 1, ["one", "two"])
    dv.chunks = [dv.chunks[0].model_copy(update={"id": "id-b"}), dv.chunks[1].model_copy(update={"id": "id-a"})]
    watch = _watcher(pg_url)
    t, out = _in_thread(lambda: s.write_version(dv))
    _wait_until(lambda: _blocked_by(watch, other.info.backend_pid), "the store's write to wait for id-a")
    other.execute(insert, ("id-b", vec))  # does not wait: the store holds no id yet
    other.execute("INSERT INTO versions VALUES ('a', 1, 'current', NULL, NULL, 'a', 'x', 'h', 2, NULL)")
    other.commit()
    other.close()
    t.join(WAIT_S)
    (err,) = out
    assert isinstance(err, InputError) and "already belongs to document 'a'" in str(err), err
    assert s.retried == 0 and s.documents() == ["a"]
    watch.close()
    s.close()


@pytest.mark.postgres
def test_a_deadlock_victim_is_written_on_a_later_try(pg_url: str) -> None:  # noqa: F811
    """A session outside docket takes the statistics rows in the opposite order and forms a real
    cycle with a write; PostgreSQL aborts the write (the store waited first, so it detects the
    deadlock), the store tries the whole version again, and the version lands once, all of it."""
    import psycopg

    s = open_store(pg_url)
    s.set_meta({"embedder": EMB.name, "dim": str(EMB.dim)})
    low, high = sorted([("group:x",), ("group:y",)], key=acl_class)
    s.write_version(version("seed-low", 1, ["seed"], acl=low))
    s.write_version(version("seed-high", 1, ["seed"], acl=high))
    other = psycopg.connect(pg_url)
    other.execute("SET deadlock_timeout = '20s'")
    other.execute("SELECT 1 FROM acl_classes WHERE id = %s FOR UPDATE", (acl_class(high),))
    dv = version("both", 1, ["low text", "high text"])
    dv.chunks = [dv.chunks[0].model_copy(update={"acl": low}), dv.chunks[1].model_copy(update={"acl": high})]
    watch = _watcher(pg_url)
    t, out = _in_thread(lambda: s.write_version(dv))
    _wait_until(lambda: _blocked_by(watch, other.info.backend_pid), "the write to wait for the high class's row")
    other.execute("SELECT 1 FROM acl_classes WHERE id = %s FOR UPDATE", (acl_class(low),))  # the cycle
    other.commit()
    other.close()
    t.join(WAIT_S)
    (result,) = out
    assert not isinstance(result, Exception), result
    assert s.retried == 1
    assert [c.text for c in s.chunks_of("both", 1)] == ["low text", "high text"]
    assert escapes(pg_url, []) == []  # the statistics still count the rows
    watch.close()
    s.close()


@pytest.mark.postgres
def test_a_write_aborted_on_every_try_is_a_reported_problem(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    import psycopg

    from docket.store import postgres

    s = open_store(pg_url)
    s.set_meta({"embedder": EMB.name, "dim": str(EMB.dim)})
    calls = []

    def always_deadlocked(dv: object) -> object:
        calls.append(dv)
        raise psycopg.errors.DeadlockDetected("deadlock detected")

    monkeypatch.setattr(s, "_write", always_deadlocked)
    monkeypatch.setattr(postgres.time, "sleep", lambda _s: None)
    report = index_versions(s, [version("doomed", 1, ["never lands"])], IndexOptions(embedder=EMB))
    assert len(calls) == postgres._TRIES
    ((where, message),) = report.problems
    assert where == "test:doomed" and "PostgreSQL aborted it 6 times (deadlock detected)" in message
    assert "nothing of it was stored" in message
    monkeypatch.undo()
    assert s.count() == 0 and s.documents() == []
    s.close()
