"""The access-control rule, as a property (issue 20 §1, 25 §1): for any small store and any
principal, the brief is byte-identical to the one from a store that never held what the
principal may not read. Through the Python API, the HTTP service and the three integrations.
The red team (tests/test_redteam_acl_versions.py) runs more cases, on PostgreSQL too."""

from __future__ import annotations

from typing import Any

import pytest
from acl_cases import (
    INTEGRATIONS,
    Request,
    approximate_dense,
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
from hypothesis import HealthCheck, given, settings

from docket.store.access import Principal

FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


@FAST
@given(records=corpora(), who=principals, req=requests())
def test_a_session_brief_is_the_brief_of_a_store_without_what_the_principal_cannot_read(
        records: list[dict[str, Any]], who: Principal | None, req: Request) -> None:
    with sqlite_locations() as new:
        full, bare = indexed(new(), records), indexed(new(), readable(records, who))
        try:
            assert via_session(full, who, req) == via_session(bare, who, req)
        finally:
            full.close()
            bare.close()


@FAST
@given(records=corpora(), who=principals, req=requests())
def test_the_brief_is_the_brief_without_what_the_principal_cannot_read_under_approximate_search(
        records: list[dict[str, Any]], who: Principal | None, req: Request) -> None:
    """The same property with every SQLite dense search going through the IVF index (issue 22)."""
    with approximate_dense(), sqlite_locations() as new:
        full, bare = indexed(new(), records), indexed(new(), readable(records, who))
        try:
            assert via_session(full, who, req) == via_session(bare, who, req)
        finally:
            full.close()
            bare.close()


@FAST
@given(records=corpora(), who=principals, req=requests())
def test_a_memory_store_brief_is_the_brief_of_one_without_what_the_principal_cannot_read(
        records: list[dict[str, Any]], who: Principal | None, req: Request) -> None:
    assert via_memory(records, who, req) == via_memory(readable(records, who), who, req)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(records=corpora(), who=principals, req=requests())
def test_the_service_brief_and_trace_page_are_those_of_a_store_without_it(
        records: list[dict[str, Any]], who: Principal | None, req: Request, tmp_path_factory: Any) -> None:
    keys, tokens = key_file(tmp_path_factory.mktemp("keys"))
    with sqlite_locations() as new:
        a, b = new(), new()
        indexed(a, records).close()
        indexed(b, readable(records, who)).close()
        ca, cb = client(a, keys), client(b, keys)
        assert via_http(ca, tokens, who, req) == via_http(cb, tokens, who, req)
        # /v1/assemble with the caller's own records: the page must not name what `who` may not read
        body = {"question": req.question, "candidates": [{**r, "score": 0.5} for r in records]}
        bare = {"question": req.question, "candidates": [{**r, "score": 0.5} for r in readable(records, who)]}
        assert via_http(ca, tokens, who, req, "/v1/assemble", body) == via_http(ca, tokens, who, req, "/v1/assemble",
                                                                                  bare)


@pytest.mark.parametrize("framework", list(INTEGRATIONS))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(records=corpora(), who=principals, req=requests())
def test_an_integration_brief_is_the_brief_without_what_the_principal_cannot_read(
        framework: str, records: list[dict[str, Any]], who: Principal | None, req: Request) -> None:
    pytest.importorskip({"langchain": "langchain_core", "llamaindex": "llama_index.core",
                         "haystack": "haystack"}[framework])
    run = INTEGRATIONS[framework]
    assert run(records, who, req) == run(readable(records, who), who, req)
