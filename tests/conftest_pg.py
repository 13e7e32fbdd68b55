"""A real PostgreSQL 16 + pgvector for the store tests, started by the tests themselves.

The `pgserver` wheel bundles the server; it starts in about a second on a unix socket in a
temporary directory and is deleted at the end of the session. Each test gets its own fresh
schema (first on the connection's search_path; the pgvector type lives in `public`), so tests
never see each other's rows and no test pays for a CREATE DATABASE. Import the fixtures into a test module with
`from conftest_pg import pg_server, pg_url  # noqa: F401`.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
import warnings
from collections.abc import Iterator

import pytest

_counter = itertools.count()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """The base URI of a running server (database `postgres`)."""
    pgserver = pytest.importorskip("pgserver", reason="pip install 'docket[postgres]' to run PostgreSQL tests")
    parent = tempfile.mkdtemp(prefix="docket-pg-")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server = pgserver.get_server(f"{parent}/data", cleanup_mode="delete")
    uri = server.get_uri()
    import psycopg

    with psycopg.connect(uri, autocommit=True) as conn:  # a throw-away server: durability buys nothing
        for setting in ("fsync = off", "synchronous_commit = off", "full_page_writes = off"):
            conn.execute(f"ALTER SYSTEM SET {setting}")
        conn.execute("SELECT pg_reload_conf()")
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    yield uri
    _stop_now(server)
    server.cleanup()
    shutil.rmtree(parent, ignore_errors=True)


def _stop_now(server: object) -> None:
    """Immediate shutdown (SIGQUIT): the data directory is deleted next, so no checkpoint is owed."""
    import signal

    info = getattr(server, "_postmaster_info", None)
    proc = getattr(info, "process", None)
    if proc is not None and proc.is_running():
        proc.send_signal(signal.SIGQUIT)
        try:
            proc.wait(5)
        except Exception:  # psutil.TimeoutExpired; cleanup() then stops it its own way
            pass


@pytest.fixture()
def pg_url(pg_server: str) -> str:
    """The URI of a new empty schema on the session's server."""
    import psycopg

    name = f"docket_test_{next(_counter)}"
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    sep = "&" if "?" in pg_server else "?"
    return f"{pg_server}{sep}options=-csearch_path%3D{name}%2Cpublic"


#: each (term, ACL class) whose stored document frequency (term_df, schema 6) is not the count of
#: its postings; a row left at 0 by deletes stands for a count of 0
_DF_MISMATCH = """
SELECT coalesce(d.term, p.term) AS term, coalesce(d.cls, p.cls) AS cls, coalesce(d.df, 0) AS df, coalesce(p.n, 0) AS n
FROM term_df d FULL JOIN (SELECT term, cls, count(*) AS n FROM chunk_terms GROUP BY term, cls) p
  ON p.term = d.term AND p.cls = d.cls
WHERE coalesce(d.df, 0) <> coalesce(p.n, 0) ORDER BY 1, 2
"""


def term_df_mismatch(conn: object) -> list[str]:
    """One line per stored document frequency that differs from its postings' count (empty: all agree)."""
    rows = conn.execute(_DF_MISMATCH).fetchall()  # type: ignore[attr-defined]
    return [f"term {r['term']!r} class {r['cls']}: term_df says {r['df']}, the postings {r['n']}" for r in rows]
