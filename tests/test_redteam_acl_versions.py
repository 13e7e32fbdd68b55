"""Red team, access control through versions, the service and the integrations (slow;
`scripts/redteam.sh`; issues 25 §1, 20 §1, 24 §2). The rule: a principal's brief is
byte-identical to the brief from a store that never held what it may not read. Random small
stores (public and restricted chunks, restricted newer versions, versions dated ahead of time,
copies and conflicting values), random principals and request options, on SQLite and
PostgreSQL, through the Python API, /v1/ask and /v1/assemble (with its trace page) and the
LangChain, LlamaIndex and Haystack adapters. A leak is one brief that differs."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest
from acl_cases import (
    INTEGRATIONS,
    Request,
    client,
    corpora,
    indexed,
    key_file,
    principals,
    readable,
    requests,
    sqlite_locations,
    via_http,
    via_memory,
    via_session,
)
from conftest_pg import pg_server, pg_url  # noqa: F401
from hypothesis import HealthCheck, Phase, given, settings
from redteam_log import record

from docket.store.access import Principal

pytestmark = pytest.mark.slow
BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
_schemas = itertools.count()


def _many(n: int) -> settings:
    # no shrinking: every case is counted, the first differing ones are kept for the message
    return settings(max_examples=n, deadline=None, derandomize=True, phases=[Phase.generate],
                    suppress_health_check=list(HealthCheck))


def _pg_locations(server: str) -> Callable[[], str]:
    import psycopg

    def new() -> str:
        name = f"docket_acl_{next(_schemas)}"
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {name}")
        sep = "&" if "?" in server else "?"
        return f"{server}{sep}options=-csearch_path%3D{name}%2Cpublic"

    return new


class Tally:
    def __init__(self) -> None:
        self.tried = 0
        self.leaked = 0
        self.first: list[Any] = []

    def check(self, got: str, want: str, case: Any) -> None:
        self.tried += 1
        if got != want:
            self.leaked += 1
            if len(self.first) < 3:
                self.first.append(case)


@pytest.mark.parametrize("backend", BACKENDS)
def test_redteam_versions_per_reader_through_the_session(backend: str, request: pytest.FixtureRequest) -> None:
    tally = Tally()

    def run(new: Callable[[], str]) -> None:
        @_many(200 if backend == "sqlite" else 60)
        @given(records=corpora(), who=principals, req=requests())
        def case(records: list[dict[str, Any]], who: Principal | None, req: Request) -> None:
            full, bare = indexed(new(), records), indexed(new(), readable(records, who))
            try:
                tally.check(via_session(full, who, req), via_session(bare, who, req), (records, who, req))
            finally:
                full.close()
                bare.close()

        case()

    if backend == "sqlite":
        with sqlite_locations() as new:
            run(new)
    else:
        run(_pg_locations(request.getfixturevalue("pg_server")))
    record(f"acl/versions-per-reader-{backend}", tally.tried, leaked=tally.leaked)
    assert tally.leaked == 0, tally.first


def test_redteam_versions_per_reader_through_the_service(tmp_path_factory: pytest.TempPathFactory) -> None:
    keys, tokens = key_file(tmp_path_factory.mktemp("keys"))
    ask, page = Tally(), Tally()
    with sqlite_locations() as new:
        @_many(60)
        @given(records=corpora(), who=principals, req=requests())
        def case(records: list[dict[str, Any]], who: Principal | None, req: Request) -> None:
            a, b = new(), new()
            indexed(a, records).close()
            indexed(b, readable(records, who)).close()
            ca, cb = client(a, keys), client(b, keys)
            ask.check(via_http(ca, tokens, who, req), via_http(cb, tokens, who, req), (records, who, req))
            body = {"question": req.question, "candidates": [{**r, "score": 0.5} for r in records]}
            bare = {"question": req.question, "candidates": [{**r, "score": 0.5} for r in readable(records, who)]}
            page.check(via_http(ca, tokens, who, req, "/v1/assemble", body),
                       via_http(ca, tokens, who, req, "/v1/assemble", bare), (records, who))

        case()
    record("acl/service-ask-per-reader", ask.tried, leaked=ask.leaked)
    record("acl/service-assemble-trace-page", page.tried, leaked=page.leaked)
    assert ask.leaked == 0 and page.leaked == 0, (ask.first, page.first)


@pytest.mark.parametrize("framework", list(INTEGRATIONS))
def test_redteam_versions_per_reader_through_the_integrations(framework: str) -> None:
    pytest.importorskip({"langchain": "langchain_core", "llamaindex": "llama_index.core",
                         "haystack": "haystack"}[framework])
    tally = Tally()
    run = INTEGRATIONS[framework]

    @_many(100)
    @given(records=corpora(), who=principals, req=requests())
    def case(records: list[dict[str, Any]], who: Principal | None, req: Request) -> None:
        tally.check(run(records, who, req), run(readable(records, who), who, req), (records, who, req))

    case()
    record(f"acl/integration-{framework}-per-reader", tally.tried, leaked=tally.leaked)
    assert tally.leaked == 0, tally.first


def test_redteam_versions_per_reader_through_a_memory_store() -> None:
    tally = Tally()

    @_many(200)
    @given(records=corpora(), who=principals, req=requests())
    def case(records: list[dict[str, Any]], who: Principal | None, req: Request) -> None:
        tally.check(via_memory(records, who, req), via_memory(readable(records, who), who, req), (records, who, req))

    case()
    record("acl/versions-per-reader-memory", tally.tried, leaked=tally.leaked)
    assert tally.leaked == 0, tally.first
