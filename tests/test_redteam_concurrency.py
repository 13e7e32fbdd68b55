"""Red team, concurrent writers (slow; `scripts/redteam.sh`): many races of writers into an empty
store, as threads and as separate processes, on both backends. Each writer indexes, re-indexes,
versions and deletes its own documents (chunks of five ACL classes, so the writers share the BM25
statistics rows) and races the others for a pool of chunk ids (`concurrency_kit.py`).

tried = document versions written by all writers; escaped = every lost or failed batch, problem
on a writer's own document, stored state that is not the last one written, claimed version
stored in part, statistics row that no longer counts its chunks, or deadlock error surfacing.
On PostgreSQL the lock order must hold on its own: a transaction retried after a deadlock also
fails the test (the retry is the last line, not the mechanism)."""

from __future__ import annotations

import itertools

import pytest
from concurrency_kit import escapes, race
from conftest_pg import pg_server  # noqa: F401
from redteam_log import record

pytestmark = pytest.mark.slow
_schemas = itertools.count()

#: (how, races, writers, rounds per writer): processes start slowly, so fewer races
PLANS = [("threads", 25, 6, 4), ("processes", 4, 6, 3)]


def _fresh(request: pytest.FixtureRequest, backend: str, tmp_path, i: int) -> str:  # noqa: ANN001
    if backend == "sqlite":
        return str(tmp_path / f"race{i}.db")
    import psycopg

    base = request.getfixturevalue("pg_server")
    name = f"redteam_race_{next(_schemas)}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    return f"{base}{'&' if '?' in base else '?'}options=-csearch_path%3D{name}%2Cpublic"


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
@pytest.mark.parametrize(("how", "races", "writers", "rounds"), PLANS)
def test_redteam_concurrent_writers(request: pytest.FixtureRequest, tmp_path, backend: str, how: str,  # noqa: ANN001
                                    races: int, writers: int, rounds: int) -> None:
    tried, bad, retried = 0, [], 0
    for i in range(races):
        location = _fresh(request, backend, tmp_path, i)
        outcomes = race(location, how, writers=writers, rounds=rounds, seed=100 + i)
        tried += sum(o.versions for o in outcomes)
        retried += sum(o.retried for o in outcomes)
        bad += [f"race {i}: {line}" for line in escapes(location, outcomes)]
    record(f"store/concurrent-writers-{backend}-{how}", tried, escaped=len(bad),
           note=f"{races} races x {writers} writers x {rounds} rounds into an empty store; "
                f"{retried} transactions retried after a deadlock")
    assert bad == [], bad[:10]
    assert retried == 0, f"{retried} write transactions were deadlock victims: the lock order has a hole"
